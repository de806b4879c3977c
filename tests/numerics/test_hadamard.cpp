// test_hadamard.cpp — the random Hadamard transform of the FP4 recipes (kernels/numerics/hadamard.h).
//
// 1. The butterflies compute H_n x for the dense Sylvester matrix H_n[i][j] = (-1)^popcount(i & j),
//    bit for bit on integer inputs (every partial sum exact) and within fp32 rounding on random ones.
// 2. Orthogonality: H_n applied twice is n · I (exactly, on integers); the normalized transform with
//    random signs followed by its inverse with the same signs gives x back bit for bit; the
//    transform keeps the dot product of two chunks transformed with the same signs.
// 3. The signs: ±1 only, keyed by (seed, step) and index (the same key gives the same signs; another
//    step or seed other signs), about half negative.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/numerics/hadamard.h"

namespace farthing::numerics {
namespace {

constexpr int kSizes[] = {4, 16, 64, 256};

std::vector<float> dense_hadamard(const std::vector<float>& x) {
  const int n = int(x.size());
  std::vector<float> y(x.size());
  for (int i = 0; i < n; ++i) {
    double s = 0.0;
    for (int j = 0; j < n; ++j) s += (std::popcount(unsigned(i & j)) % 2 == 0 ? 1.0 : -1.0) * x[size_t(j)];
    y[size_t(i)] = float(s);
  }
  return y;
}

TEST(Hadamard, ButterfliesEqualTheDenseMatrix) {
  std::mt19937 rng(7);
  for (const int n : kSizes) {
    std::vector<float> ints(static_cast<size_t>(n)), reals(static_cast<size_t>(n));
    std::uniform_int_distribution<int> small(-1000, 1000);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int i = 0; i < n; ++i) {
      ints[size_t(i)] = float(small(rng));
      reals[size_t(i)] = normal(rng);
    }
    std::vector<float> y = ints;
    walsh_hadamard_unnormalized(y.data(), n);
    EXPECT_EQ(y, dense_hadamard(ints)) << "n " << n;  // integer sums below 2^24: exact
    y = reals;
    walsh_hadamard_unnormalized(y.data(), n);
    const std::vector<float> ref = dense_hadamard(reals);
    for (int i = 0; i < n; ++i) {
      // log2(n) fp32 additions of partial sums no larger than n * max|x|.
      EXPECT_NEAR(y[size_t(i)], ref[size_t(i)], 1e-5 * n) << "n " << n << " i " << i;
    }
  }
}

TEST(Hadamard, TwiceIsNTimesIdentityAndTheInverseUndoesIt) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> small(-100, 100);
  for (const int n : kSizes) {
    std::vector<float> x(static_cast<size_t>(n)), signs(static_cast<size_t>(n));
    const RandomKey key{42, 3, RandomPurpose::kHadamardSigns};
    for (int i = 0; i < n; ++i) {
      x[size_t(i)] = float(small(rng));
      signs[size_t(i)] = hadamard_sign(key, uint64_t(i));
    }
    std::vector<float> y = x;
    walsh_hadamard_unnormalized(y.data(), n);
    walsh_hadamard_unnormalized(y.data(), n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(y[size_t(i)], float(n) * x[size_t(i)]) << "n " << n;
    y = x;
    random_hadamard_chunk(y.data(), signs.data(), n);
    EXPECT_NE(y, x);
    random_hadamard_chunk_inverse(y.data(), signs.data(), n);
    EXPECT_EQ(y, x) << "n " << n;  // integers: every step exact, the norm a power of two
  }
}

TEST(Hadamard, KeepsDotProductsUnderTheSameSigns) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int n = 16;
  std::vector<float> a(n), b(n), signs(n);
  for (int i = 0; i < n; ++i) {
    a[size_t(i)] = normal(rng);
    b[size_t(i)] = normal(rng);
    signs[size_t(i)] = hadamard_sign(RandomKey{9, 1, RandomPurpose::kHadamardSigns}, uint64_t(i));
  }
  double before = 0.0, after = 0.0, norm = 0.0;
  for (int i = 0; i < n; ++i) before += double(a[size_t(i)]) * b[size_t(i)];
  random_hadamard_chunk(a.data(), signs.data(), n);
  random_hadamard_chunk(b.data(), signs.data(), n);
  for (int i = 0; i < n; ++i) {
    after += double(a[size_t(i)]) * b[size_t(i)];
    norm += double(a[size_t(i)]) * a[size_t(i)];
  }
  EXPECT_NEAR(after, before, 1e-5 * norm);
}

TEST(Hadamard, SignsAreKeyedBySeedStepAndIndex) {
  const RandomKey key{1234, 7, RandomPurpose::kHadamardSigns};
  int negative = 0, differ_step = 0, differ_seed = 0;
  const int n = 4096;
  for (int i = 0; i < n; ++i) {
    const float s = hadamard_sign(key, uint64_t(i));
    ASSERT_TRUE(s == 1.0f || s == -1.0f);
    EXPECT_EQ(s, hadamard_sign(key, uint64_t(i)));
    negative += s < 0.0f;
    differ_step += s != hadamard_sign(RandomKey{1234, 8, RandomPurpose::kHadamardSigns}, uint64_t(i));
    differ_seed += s != hadamard_sign(RandomKey{1235, 7, RandomPurpose::kHadamardSigns}, uint64_t(i));
  }
  // Binomial(4096, 1/2): 5 standard deviations are 160.
  EXPECT_NEAR(negative, n / 2, 160);
  EXPECT_NEAR(differ_step, n / 2, 160);
  EXPECT_NEAR(differ_seed, n / 2, 160);
}

TEST(Hadamard, SupportedSizes) {
  for (const int n : kSizes) {
    EXPECT_TRUE(hadamard_size_ok(n));
    EXPECT_EQ(hadamard_norm(n) * hadamard_norm(n) * float(n), 1.0f);
  }
  for (const int n : {0, 1, 2, 8, 32, 128, 512}) EXPECT_FALSE(hadamard_size_ok(n)) << n;
}

}  // namespace
}  // namespace farthing::numerics
