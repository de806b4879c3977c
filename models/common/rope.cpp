// rope.cpp — see rope.h.
#include "models/common/rope.h"

#include <cmath>

namespace farthing::models {

void rope_tables(const ModelConfig& c, int64_t positions, std::vector<float>& cos_out,
                 std::vector<float>& sin_out, bool sliding) {
  const int64_t D = c.head_dim(), half = D / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  // Gemma 3's sliding layers rotate with their own base and without the global layers' scaling;
  // Qwen's (no rope_local_theta) as the others do.
  const bool own = sliding && c.rope_local_theta > 0.0f;
  const double theta = own ? double(c.rope_local_theta) : double(c.rope_theta);
  const RopeScaling rs = own ? RopeScaling{} : c.rope_scaling;
  for (int64_t i = 0; i < half; ++i) {
    double f = 1.0 / std::pow(theta, double(2 * i) / double(D));
    if (rs.factor > 0.0f && rs.linear) {
      f = f / rs.factor;
    } else if (rs.factor > 0.0f) {
      const double pi = 3.14159265358979323846;
      const double wavelen = 2.0 * pi / f;
      const double low_wl = double(rs.original_max_position) / rs.low_freq_factor;
      const double high_wl = double(rs.original_max_position) / rs.high_freq_factor;
      if (wavelen > low_wl) {
        f = f / rs.factor;
      } else if (wavelen >= high_wl) {
        const double smooth = (double(rs.original_max_position) / wavelen - rs.low_freq_factor) /
                              (rs.high_freq_factor - rs.low_freq_factor);
        f = (1.0 - smooth) * f / rs.factor + smooth * f;
      }
    }
    inv[size_t(i)] = float(f);
  }
  cos_out.resize(size_t(positions * half));
  sin_out.resize(size_t(positions * half));
  for (int64_t t = 0; t < positions; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const float angle = float(t) * inv[size_t(i)];
      cos_out[size_t(t * half + i)] = float(std::cos(double(angle)));
      sin_out[size_t(t * half + i)] = float(std::sin(double(angle)));
    }
  }
}

}  // namespace farthing::models
