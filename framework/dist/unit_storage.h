// unit_storage.h — how a model reaches parameters and gradients that it does not own: unit by unit.
//
// The model asks for a unit's fp32 parameters just before it uses them and releases them after
// (forward, then again in backward), and hands a unit's gradients over as soon as backward has
// finished them. A pointer addresses the unit's global span: p[g - unit.begin] is global element g.
// Calls come in the same order on every rank, so an implementation may run collectives in them.
// The trainer's implementation is ParamStore (param_store.h), at every ZeRO stage; a model with
// no storage owns whole fp32 buffers instead (inference, tests).
// Relies on: nothing. Tested by: tests/train/loop/ (through ParamStore), tests/models/test_model_modes.cpp.
#pragma once

#include <cstdint>

namespace farthing::dist {

class UnitStorage {
 public:
  virtual ~UnitStorage() = default;
  // The unit's parameters widened to fp32 (fp32 compute, and fp16 compute's own GEMM copy).
  virtual const float* acquire_params(int unit) = 0;
  // bf16 compute: the unit's bf16 weights themselves, the GEMMs' operand, with no widened copy.
  virtual const uint16_t* acquire_bf16_params(int unit) = 0;
  // Ends either acquisition.
  virtual void release_params(int unit) = 0;
  // A hint, given right after the previous unit was acquired: `unit` is acquired next, so its
  // gather may start now and overlap the compute in between.
  virtual void prefetch_params(int unit) { (void)unit; }
  // Where the unit's gradients of this backward go, as `adds` says the model forms them:
  //   kSeveral: elements take several additions (a head's GEMM per loss chunk); the storage
  //     hands out a zero-filled fp32 accumulator, added to (kAdd);
  //   kOnce: each element's gradient of this backward is formed whole and then put in place in
  //     one operation (a GEMM's whole product, a 1-D tensor's row sum from a scratch, an
  //     embedding's rows summed per distinct token first, or a tied one's formed on the head's
  //     product while its running sums are set aside). The storage may then hand out its
  //     running fp32 sum over this step's backwards itself (in place: written by the step's
  //     first backward, added to by the later ones), or an accumulator it has not zeroed, to be
  //     written: with no accumulator, or no zeroing, the bits are still those of a zeroed
  //     accumulator's copies and adds, ((g0 + g1) + g2).
  enum class GradAdds { kOnce, kSeveral };
  // How the model puts this backward's gradients into what acquire_grads hands out:
  //   kAdd: onto each element (zeros, or this step's running sum);
  //   kOverwrite (kOnce only): the values in the unit's span [begin, end) are undefined, and
  //     the model writes each element once: every tensor's gradient whole (a GEMM with beta 0,
  //     the 1-D sums copied, an untied embedding's table or learned positions zeroed and their
  //     rows added) and the alignment gaps between its tensors zeroed. What lies past `end` is
  //     the storage's (zeroed).
  enum class GradWrite { kAdd, kOverwrite };
  struct UnitGrads {
    float* data = nullptr;  // p[g - unit.begin] is global element g
    GradWrite write = GradWrite::kAdd;
  };
  virtual UnitGrads acquire_grads(int unit, GradAdds adds) = 0;
  // The unit's gradients of this backward are complete (an accumulator may be freed). Their
  // reduction over ranks may start here and still be in flight when this returns.
  virtual void grads_ready(int unit) = 0;
  // Backward has handed every unit over: what grads_ready left in flight finishes before this
  // returns, so the gradients (or the fused steps) of this pass are all done.
  virtual void backward_done() {}
};

}  // namespace farthing::dist
