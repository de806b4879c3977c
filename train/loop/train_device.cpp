// train_device.cpp — see train_device.h.
#include "train/loop/train_device.h"

#include "framework/backend/backend.h"
#include "framework/core/error.h"

namespace farthing::train {

Device resolve_train_device(recipe::TrainDevice choice, int local_rank) {
  if (choice == recipe::TrainDevice::kStrict) return Device::strict();
  if (choice == recipe::TrainDevice::kCpu || (choice == recipe::TrainDevice::kAuto && !cuda_available())) {
    return Device::cpu();
  }
  FARTHING_CHECK(cuda_available(), "train.device is '", recipe::enum_name(choice), "' but this farthing sees no CUDA device (built "
                 "without CUDA, no driver, or no GPU: check nvidia-smi and CUDA_VISIBLE_DEVICES); set train.device: cpu");
  return Device::cuda(local_rank % visible_cuda_devices());
}

}  // namespace farthing::train
