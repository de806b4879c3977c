// test_loss_scaler.cpp — the dynamic loss scaler follows GradScaler's schedule: backoff on a
// non-finite step, growth after growth_interval clean steps, restored state continues alike.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/optim/loss_scaler.h"

using farthing::optim::LossScaler;
using farthing::optim::LossScalerOptions;

TEST(LossScaler, BacksOffOnNonFiniteAndGrowsAfterInterval) {
  LossScalerOptions o;
  o.initial_scale = 1024.0;
  o.growth_interval = 3;
  LossScaler s(o, true);
  EXPECT_EQ(s.scale(), 1024.0);
  s.update(true);
  EXPECT_EQ(s.scale(), 512.0);
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 512.0);
  s.update(false);  // third clean step in a row
  EXPECT_EQ(s.scale(), 1024.0);
  EXPECT_EQ(s.clean_steps(), 0);
  s.update(false);
  s.update(true);  // a non-finite step resets the count
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_EQ(s.clean_steps(), 2);
  LossScaler r(o, true);
  r.restore(s.scale(), s.clean_steps());
  s.update(false);
  r.update(false);
  EXPECT_EQ(r.scale(), s.scale());
  EXPECT_EQ(r.scale(), 1024.0);
}

TEST(LossScaler, DisabledIsOne) {
  LossScaler s(LossScalerOptions{}, false);
  s.update(true);
  EXPECT_EQ(s.scale(), 1.0);
}

TEST(LossScaler, RejectsBadOptions) {
  LossScalerOptions o;
  o.backoff_factor = 1.5;
  EXPECT_THROW(LossScaler(o, true), farthing::Error);
}
