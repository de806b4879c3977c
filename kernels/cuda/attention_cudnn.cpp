// attention_cudnn.cpp — see attention_cudnn.h. Host code only: the frontend builds cuDNN graphs
// and queues cuDNN's own kernels.
#include "kernels/cuda/attention_cudnn.h"

#include <dlfcn.h>

#include <cudnn_frontend.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "kernels/cuda/attention_documents_cuda.h"
#include "kernels/numerics/error.h"

// The frontend's handle on the loaded libcudnn (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING: it
// resolves every cuDNN symbol through this handle; the application defines and sets it).
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace farthing::kernels {

namespace fe = cudnn_frontend;

namespace {

// kernels/ sits below framework/core's FARTHING_CHECK: the same Error, thrown here.
template <class... Parts>
void require(bool ok, const Parts&... parts) {
  if (!ok) throw Error(error_detail::concat(parts...));
}

// The tensors' ids in a graph's variant pack.
enum Uid : fe::graph::Tensor_attributes::uid_t {
  kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV,
  kSeqLenQ, kSeqLenKV, kQkvOffset, kOutOffset, kStatsOffset  // the ragged batch of documents
};

// libcudnn.so.9, once per process; the empty string when loaded, else why not.
const std::string& load_cudnn() {
  static const std::string why_not = [] {
    // The frontend also loads the CUDA runtime by name and, finding libcudart.so.12 beside .13
    // (as on a machine with PyTorch wheels of both), would take the first: name ours.
    setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", "libcudart.so.13", 0);
    dlerror();
    void* handle = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      return std::string("libcudnn.so.9 not found (") + (error != nullptr ? error : "dlopen failed") +
             "); pip install nvidia-cudnn-cu13 and put its nvidia/cudnn/lib on LD_LIBRARY_PATH";
    }
    fe::cudnn_dlhandle = handle;
    const size_t version = fe::detail::get_backend_version();
    if (version < 90000) return "libcudnn " + std::to_string(version) + " is older than 9.0";
    return std::string();
  }();
  return why_not;
}

// Documents packed into the sequences (s.doc_start) run as cuDNN's ragged batch: each document
// is one sequence of the graph's batch (its length in seq_len_q and seq_len_kv, with the padding
// mask), found in place in qkv, out and lse through per-document element offsets
// (attention_documents_cuda.h), so nothing is copied or padded per document. The causal mask and
// the sliding window's left bound apply within each document from its first row (top-left
// alignment), which is attention_first_key's max(document start, i - window + 1). The graph's
// batch is a bound on the documents and its sequence length a bound on the longest, each the next
// power of two (the length at most T), so a few graphs serve every micro-batch; the entries past
// the real documents are empty. The length bound keeps cuDNN's backward workspace (its dP
// scratch grows as batch x length^2) near the dense path's for the same rows: many short
// documents make a large batch of short sequences, not of T-long ones.
int64_t power_of_two_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}
// 0: no documents (B sequences of T).
int64_t document_bound(const AttentionShape& s) { return s.doc_start ? power_of_two_at_least(s.documents) : 0; }
int64_t length_bound(const AttentionShape& s) {
  return s.doc_start ? std::min(s.seq, power_of_two_at_least(s.longest_document)) : 0;
}

// The graph's batch and sequence length: the documents' bounds, else the micro-batch's B and T.
int64_t graph_batch(const AttentionShape& s) { return s.doc_start ? document_bound(s) : s.batch; }
int64_t graph_seq(const AttentionShape& s) { return s.doc_start ? length_bound(s) : s.seq; }

// Element (b, h, t, d) of the q, k or v part of the packed rows, or of out / dout (B*T, Hq*D); a
// document's b stride is replaced by its ragged offset.
std::vector<int64_t> packed_strides(const AttentionShape& s, int64_t row_stride) {
  return {s.seq * row_stride, s.head_dim, row_stride, 1};
}

std::shared_ptr<fe::graph::Tensor_attributes> bf16_tensor(fe::graph::Graph& g, const char* name, Uid uid,
                                                          const AttentionShape& s, int64_t heads, int64_t row_stride) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({graph_batch(s), heads, graph_seq(s), s.head_dim})
                      .set_stride(packed_strides(s, row_stride))
                      .set_data_type(fe::DataType_t::BFLOAT16));
}

// The softmax statistics (B, Hq, T, 1), fp32; a document's offset replaces its b stride.
std::vector<int64_t> stats_dims(const AttentionShape& s) { return {graph_batch(s), s.q_heads, graph_seq(s), 1}; }
std::vector<int64_t> stats_strides(const AttentionShape& s) { return {s.q_heads * s.seq, s.seq, 1, 1}; }

using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

TensorPtr int32_tensor(fe::graph::Graph& g, const char* name, Uid uid, int64_t n) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({n, 1, 1, 1})
                      .set_stride({1, 1, 1, 1})
                      .set_data_type(fe::DataType_t::INT32));
}

// A graph's ragged batch: the documents' lengths and their offsets in qkv, out and lse.
struct RaggedTensors {
  TensorPtr seq_len_q, seq_len_kv, qkv_offset, out_offset, stats_offset;
};

RaggedTensors ragged_tensors(fe::graph::Graph& g, const AttentionShape& s) {
  const int64_t bound = document_bound(s);
  return {int32_tensor(g, "seq_len_q", kSeqLenQ, bound), int32_tensor(g, "seq_len_kv", kSeqLenKV, bound),
          int32_tensor(g, "qkv_offset", kQkvOffset, bound + 1),
          int32_tensor(g, "out_offset", kOutOffset, bound + 1),
          int32_tensor(g, "stats_offset", kStatsOffset, bound + 1)};
}

// Sets what both directions share on a graph of documents: per-document lengths under the
// padding mask. NOTE: no max_total_seq_len: with it the frontend lays its backward scratch out
// in the statistics' strides and sizes it for a token-major ([t, h] or [h, t]) layout, too small
// for lse's (B, Hq, T); without it the scratch is a dense (batch, Hq, length) of its own.
template <class Options>
void set_documents(Options& options, const RaggedTensors& r) {
  options.set_padding_mask(true).set_seq_len_q(r.seq_len_q).set_seq_len_kv(r.seq_len_kv);
}

float scale_of(const AttentionShape& s) { return s.scale(); }  // attention_steps.h

// A bf16-in, fp32-inside graph with its q, k and v inputs over the packed rows.
struct QkvGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  TensorPtr q, k, v;
  RaggedTensors ragged;  // set when s has documents
};

QkvGraph new_qkv_graph(const AttentionShape& s) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const int64_t stride = s.qkv_stride();
  QkvGraph qkv{g, bf16_tensor(*g, "q", kQ, s, s.q_heads, stride), bf16_tensor(*g, "k", kK, s, s.kv_heads, stride),
               bf16_tensor(*g, "v", kV, s, s.kv_heads, stride), {}};
  if (s.doc_start != nullptr) {
    qkv.ragged = ragged_tensors(*g, s);
    for (const TensorPtr& t : {qkv.q, qkv.k, qkv.v}) t->set_ragged_offset(qkv.ragged.qkv_offset);
  }
  return qkv;
}

std::shared_ptr<fe::graph::Graph> forward_graph(const AttentionShape& s) {
  auto [g, q, k, v, ragged] = new_qkv_graph(s);
  const int64_t out_stride = s.q_heads * s.head_dim;
  auto options = fe::graph::SDPA_attributes()
                     .set_name("farthing_attention_forward")
                     .set_generate_stats(true)
                     .set_causal_mask(true)
                     .set_attn_scale(scale_of(s));
  // cuDNN's sliding window keeps keys j > i - window: attention_first_key's i - window + 1 on.
  if (s.window > 0) options.set_diagonal_band_left_bound(int(s.window));
  if (s.doc_start != nullptr) set_documents(options, ragged);
  auto [o, stats] = g->sdpa(q, k, v, options);
  o->set_output(true).set_uid(kO).set_dim({graph_batch(s), s.q_heads, graph_seq(s), s.head_dim}).set_stride(
      packed_strides(s, out_stride));
  stats->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT).set_dim(stats_dims(s)).set_stride(
      stats_strides(s));
  if (s.doc_start != nullptr) {
    o->set_ragged_offset(ragged.out_offset);
    stats->set_ragged_offset(ragged.stats_offset);
  }
  return g;
}

std::shared_ptr<fe::graph::Graph> backward_graph(const AttentionShape& s, bool deterministic) {
  auto [g, q, k, v, ragged] = new_qkv_graph(s);
  const int64_t stride = s.qkv_stride(), out_stride = s.q_heads * s.head_dim;
  auto o = bf16_tensor(*g, "o", kO, s, s.q_heads, out_stride);
  auto dout = bf16_tensor(*g, "dO", kDO, s, s.q_heads, out_stride);
  auto stats = g->tensor(fe::graph::Tensor_attributes()
                             .set_name("stats")
                             .set_uid(kStats)
                             .set_dim(stats_dims(s))
                             .set_stride(stats_strides(s))
                             .set_data_type(fe::DataType_t::FLOAT));
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("farthing_attention_backward")
                     .set_causal_mask(true)
                     .set_attn_scale(scale_of(s))
                     .set_deterministic_algorithm(deterministic);
  if (s.window > 0) options.set_diagonal_band_left_bound(int(s.window));
  if (s.doc_start != nullptr) {
    set_documents(options, ragged);
    o->set_ragged_offset(ragged.out_offset);
    dout->set_ragged_offset(ragged.out_offset);
    stats->set_ragged_offset(ragged.stats_offset);
  }
  auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, dout, stats, options);
  dq->set_output(true).set_uid(kDQ).set_dim({graph_batch(s), s.q_heads, graph_seq(s), s.head_dim}).set_stride(
      packed_strides(s, stride));
  dk->set_output(true).set_uid(kDK).set_dim({graph_batch(s), s.kv_heads, graph_seq(s), s.head_dim}).set_stride(
      packed_strides(s, stride));
  dv->set_output(true).set_uid(kDV).set_dim({graph_batch(s), s.kv_heads, graph_seq(s), s.head_dim}).set_stride(
      packed_strides(s, stride));
  if (s.doc_start != nullptr) {
    for (const TensorPtr& t : {dq, dk, dv}) t->set_ragged_offset(ragged.qkv_offset);
  }
  return g;
}

struct Plan {
  std::shared_ptr<fe::graph::Graph> graph;  // null when cuDNN has no plan for the shape
  int64_t workspace = 0;
  std::string why_not;
};

// The shape, window, score scalar, documents' bounds (0: none) and direction.
using PlanKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

// Why a graph of documents cannot be built for s; "" when it can.
std::string documents_refused(const AttentionShape& s) {
  if (s.doc_start == nullptr) return "";
  if (s.documents < 1 || s.longest_document < 1 || s.longest_document > s.seq) {
    return "the documents' count and longest are not given (AttentionShape::documents, longest_document)";
  }
  if (s.batch * s.seq * s.qkv_stride() > INT32_MAX) return "the documents' offsets in qkv pass int32";
  return "";
}

using VariantPack = std::unordered_map<fe::graph::Tensor_attributes::uid_t, void*>;

// For a graph of documents: fills the ragged batch's arrays at the start of the workspace (on
// the stream, before cuDNN reads them), binds them, and returns where cuDNN's workspace starts.
void* bind_documents(const AttentionShape& s, VariantPack& pack, void* workspace, cudaStream_t stream) {
  if (s.doc_start == nullptr) return workspace;
  const int64_t bound = document_bound(s);
  const RaggedDocuments r = ragged_documents_in(workspace, bound);
  ragged_documents_cuda(s, bound, r, stream);
  pack[kSeqLenQ] = r.lengths;  // a document attends within itself: one length for both
  pack[kSeqLenKV] = r.lengths;
  pack[kQkvOffset] = r.qkv_offset;
  pack[kOutOffset] = r.out_offset;
  pack[kStatsOffset] = r.stats_offset;
  return static_cast<char*>(workspace) + ragged_documents_bytes(bound);
}

}  // namespace

struct CudnnAttention::Impl {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;  // the plan cache
  std::map<PlanKey, Plan> plans;
  bool deterministic_backward = true;

  const Plan& plan(const AttentionShape& s, bool backward) {
    std::lock_guard<std::mutex> lock(mutex);
    const PlanKey key{s.batch,        s.seq,          s.q_heads,         s.kv_heads,      s.head_dim,
                      s.window,       s.score_scalar, document_bound(s), length_bound(s), backward};
    auto found = plans.find(key);
    if (found != plans.end()) return found->second;
    Plan p;
    p.why_not = documents_refused(s);
    if (!p.why_not.empty()) return plans.emplace(key, std::move(p)).first->second;
    try {
      auto g = backward ? backward_graph(s, deterministic_backward) : forward_graph(s);
      fe::error_t e = g->validate();
      if (e.is_good()) e = g->build_operation_graph(handle);
      if (e.is_good()) e = g->create_execution_plans({fe::HeurMode_t::A});
      if (e.is_good()) e = g->check_support(handle);
      if (e.is_good()) e = g->build_plans(handle);
      if (e.is_good()) e = g->get_workspace_size(p.workspace);
      // The documents' arrays go first in the workspace, cuDNN's own after them.
      if (s.doc_start != nullptr) p.workspace += int64_t(ragged_documents_bytes(document_bound(s)));
      if (e.is_good()) {
        p.graph = g;
      } else {
        p.why_not = e.get_message();
      }
    } catch (const std::exception& x) {
      p.why_not = x.what();
    }
    if (p.why_not.empty() && p.graph == nullptr) p.why_not = "no plan";
    return plans.emplace(key, std::move(p)).first->second;
  }

  void execute(const Plan& p, VariantPack& pack, void* workspace, cudaStream_t stream, const char* what) {
    const auto status = fe::detail::set_stream(handle, stream);
    require(status == CUDNN_STATUS_SUCCESS, "cuDNN attention: cudnnSetStream failed (", int(status), ")");
    fe::error_t e = p.graph->execute(handle, pack, workspace);
    require(e.is_good(), "cuDNN attention ", what, ": ", e.get_message());
  }
};

std::unique_ptr<CudnnAttention> CudnnAttention::open(std::string* why_not) {
  const std::string& load_error = load_cudnn();
  if (!load_error.empty()) {
    *why_not = load_error;
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  const auto status = fe::detail::create_handle(&impl->handle);
  if (status != CUDNN_STATUS_SUCCESS) {
    *why_not = "cudnnCreate failed (status " + std::to_string(int(status)) + ")";
    return nullptr;
  }
  return std::unique_ptr<CudnnAttention>(new CudnnAttention(std::move(impl)));
}

CudnnAttention::CudnnAttention(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CudnnAttention::~CudnnAttention() {
  impl_->plans.clear();
  if (impl_->handle != nullptr) static_cast<void>(fe::detail::destroy_handle(impl_->handle));
}

void CudnnAttention::set_deterministic_backward(bool deterministic) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->deterministic_backward == deterministic) return;
  impl_->deterministic_backward = deterministic;
  // The backward plans: the key ends with the direction.
  std::erase_if(impl_->plans, [](const auto& entry) { return std::get<std::tuple_size_v<PlanKey> - 1>(entry.first); });
}

std::string CudnnAttention::version() const {
  const size_t v = fe::detail::get_backend_version();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

bool CudnnAttention::supports(const AttentionShape& s, bool backward, std::string* why_not) {
  const Plan& p = impl_->plan(s, backward);
  if (p.graph == nullptr && why_not != nullptr) *why_not = p.why_not;
  return p.graph != nullptr;
}

size_t CudnnAttention::workspace_bytes(const AttentionShape& s, bool backward) {
  return size_t(impl_->plan(s, backward).workspace);
}

void CudnnAttention::forward(const AttentionShape& s, uint16_t* out, float* lse, const uint16_t* qkv,
                             void* workspace, cudaStream_t stream) {
  const Plan& p = impl_->plan(s, false);
  require(p.graph != nullptr, "cuDNN attention forward: no plan for this shape (", p.why_not, ")");
  auto* base = const_cast<uint16_t*>(qkv);
  VariantPack pack = {
      {kQ, base},
      {kK, base + s.q_heads * s.head_dim},
      {kV, base + (s.q_heads + s.kv_heads) * s.head_dim},
      {kO, out},
      {kStats, lse}};
  impl_->execute(p, pack, bind_documents(s, pack, workspace, stream), stream, "forward");
}

void CudnnAttention::backward(const AttentionShape& s, uint16_t* dqkv, const uint16_t* dout, const uint16_t* out,
                              const float* lse, const uint16_t* qkv, void* workspace, cudaStream_t stream) {
  const Plan& p = impl_->plan(s, true);
  require(p.graph != nullptr, "cuDNN attention backward: no plan for this shape (", p.why_not, ")");
  auto* base = const_cast<uint16_t*>(qkv);
  const int64_t k_offset = s.q_heads * s.head_dim, v_offset = (s.q_heads + s.kv_heads) * s.head_dim;
  VariantPack pack = {
      {kQ, base},
      {kK, base + k_offset},
      {kV, base + v_offset},
      {kO, const_cast<uint16_t*>(out)},
      {kDO, const_cast<uint16_t*>(dout)},
      {kStats, const_cast<float*>(lse)},
      {kDQ, dqkv},
      {kDK, dqkv + k_offset},
      {kDV, dqkv + v_offset}};
  impl_->execute(p, pack, bind_documents(s, pack, workspace, stream), stream, "backward");
}

}  // namespace farthing::kernels
