// test_packed_documents.cpp — documents packed into one sequence are independent: with the
// document starts set (Transformer::set_document_starts), each of three documents packed into one
// sequence of a micro model (Llama with GQA and RoPE; GPT-2 with learned positions) gives the loss
// and the gradients it gives when it runs alone at positions 0..n-1, on the CPU in fp32 within
// 1e-6 relative, per document and summed over the three. The KV-cache decoder, run on one
// document alone, gives the packed forward's logits of that document's rows. The documents are
// long enough that the packed rows cross the CPU attention's 64-row query blocks.
// RoPE is relative, so the Llama case above holds (up to rounding) without the position restart;
// the restart is checked on the op itself: a document's rows rotated at its start's offset in a
// packed sequence are bitwise the rows rotated alone. Also: starts that neither begin a document nor continue the one before are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/core/error.h"
#include "models/common/kv_cache_decoder.h"
#include "models/common/presets.h"
#include "models/common/rope.h"
#include "models/common/transformer.h"
#include "models/gpt2/gpt2.h"
#include "models/llama/llama.h"
#include "tests/support/test_support.h"

namespace farthing::models {
namespace {

// Three documents and 11 slots of padding (a document of its own, no targets) in 160 rows.
constexpr int64_t kSeq = 160;
const std::vector<int64_t> kDocLengths = {70, 45, 34};

ModelConfig micro(const std::string& which) {
  ModelConfig c;
  if (which == "gpt2") {
    c = gpt2_124m();
    c.hidden_dim = 64;
    c.n_kv_heads = 4;
  } else {  // "llama_gqa"
    c = smollm2_135m();
    c.hidden_dim = 48;
    c.n_kv_heads = 2;
    c.tied_embeddings = false;
  }
  c.name = which + "-micro";
  c.vocab_size = 50;
  c.dim = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.max_seq_len = kSeq;
  return c;
}

// Max |a - b| over max |b|.
double relative_diff(const float* a, const float* b, int64_t n) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

struct Packed {
  std::vector<int32_t> tokens, targets, doc_start;
  std::vector<int64_t> first;  // each document's first row
};

// Random documents' inputs and targets (each document's own next tokens; its last row's
// target is the document's last token, as document_packing.h lays them out).
Packed pack(int64_t vocab) {
  test::SplitMix64 rng(5);
  Packed p;
  int64_t at = 0;
  for (int64_t n : kDocLengths) {
    p.first.push_back(at);
    for (int64_t i = 0; i < n; ++i) {
      p.tokens.push_back(int32_t(rng.next() % uint64_t(vocab)));
      p.targets.push_back(int32_t(rng.next() % uint64_t(vocab)));
      p.doc_start.push_back(int32_t(at));
    }
    at += n;
  }
  p.tokens.resize(size_t(kSeq), 0);
  p.targets.resize(size_t(kSeq), -100);
  p.doc_start.resize(size_t(kSeq), int32_t(at));
  return p;
}

class PackedDocuments : public ::testing::TestWithParam<std::string> {};

TEST_P(PackedDocuments, EachDocumentAsIfAlone) {
  const ModelConfig c = micro(GetParam());
  const TransformerSpec spec = make_spec(c);
  Transformer packed(spec, 1, kSeq);
  packed.init_weights(11, 0.1f);
  const Packed p = pack(c.vocab_size);
  const int64_t P = packed.layout().total_elems();
  std::vector<float> summed_alone(size_t(P), 0.0f);

  double worst_loss = 0, worst_grad = 0;
  for (size_t d = 0; d < kDocLengths.size(); ++d) {
    const int64_t n = kDocLengths[d], first = p.first[d];
    // Alone: the document at positions 0..n-1 of a sequence of its own length.
    Transformer alone(spec, 1, n);
    alone.init_weights(11, 0.1f);
    alone.zero_grads();
    const std::vector<int32_t> tokens(p.tokens.begin() + first, p.tokens.begin() + first + n);
    const std::vector<int32_t> targets(p.targets.begin() + first, p.targets.begin() + first + n);
    const Transformer::LossSum want = alone.forward_backward_sum(tokens.data(), targets.data(), 1.0f);
    for (int64_t i = 0; i < P; ++i) summed_alone[size_t(i)] += alone.grads()[i];

    // Packed: the same document among the others, only its targets counted.
    std::vector<int32_t> only(size_t(kSeq), -100);
    std::copy(targets.begin(), targets.end(), only.begin() + first);
    packed.zero_grads();
    packed.set_document_starts(p.doc_start.data());
    const Transformer::LossSum got = packed.forward_backward_sum(p.tokens.data(), only.data(), 1.0f);
    ASSERT_EQ(got.counted, want.counted);
    const double loss_diff = std::fabs(got.sum - want.sum) / std::fabs(want.sum);
    const double grad_diff = relative_diff(packed.grads(), alone.grads(), P);
    EXPECT_LT(loss_diff, 1e-6) << c.name << " document " << d;
    EXPECT_LT(grad_diff, 1e-6) << c.name << " document " << d;
    worst_loss = std::max(worst_loss, loss_diff);
    worst_grad = std::max(worst_grad, grad_diff);

    // The decoder, on the document alone, gives the packed forward's logits of its rows.
    const int64_t V = c.vocab_size;
    std::vector<float> logits(size_t(kSeq * V));
    packed.set_document_starts(p.doc_start.data());
    packed.forward_logits(p.tokens.data(), logits.data());
    KvCacheDecoder decoder(spec, packed.params(), n);
    std::span<const float> step = decoder.prefill(std::span(tokens).first(1));
    double worst_logit = relative_diff(step.data(), logits.data() + first * V, V);
    for (int64_t i = 1; i < n; ++i) {
      step = decoder.step(tokens[size_t(i)]);
      worst_logit = std::max(worst_logit, relative_diff(step.data(), logits.data() + (first + i) * V, V));
    }
    EXPECT_LT(worst_logit, 1e-5) << c.name << " document " << d;
  }

  // All three at once: the summed gradients of the three runs alone.
  std::vector<int32_t> all = p.targets;
  packed.zero_grads();
  packed.set_document_starts(p.doc_start.data());
  packed.forward_backward_sum(p.tokens.data(), all.data(), 1.0f);
  const double summed = relative_diff(packed.grads(), summed_alone.data(), P);
  EXPECT_LT(summed, 1e-6) << c.name;
  std::printf("%s: packed vs alone, worst relative diff: loss %.3g, gradients %.3g, summed gradients %.3g\n",
              c.name.c_str(), worst_loss, worst_grad, summed);
}

INSTANTIATE_TEST_SUITE_P(Families, PackedDocuments, ::testing::Values("llama_gqa", "gpt2"),
                         [](const auto& info) { return info.param; });

// With the starts cleared (nullptr) the sequence is one document again: the second document then
// sees the first, and its loss changes.
TEST(PackedDocuments, ClearingStartsMakesOneDocumentAgain) {
  const ModelConfig c = micro("llama_gqa");
  Transformer model(make_spec(c), 1, kSeq);
  model.init_weights(11, 0.1f);
  const Packed p = pack(c.vocab_size);
  std::vector<int32_t> second(size_t(kSeq), -100);
  std::copy(p.targets.begin() + p.first[1], p.targets.begin() + p.first[2], second.begin() + p.first[1]);
  model.set_document_starts(p.doc_start.data());
  const double apart = model.forward_loss_sum(p.tokens.data(), second.data()).sum;
  model.set_document_starts(nullptr);
  const double together = model.forward_loss_sum(p.tokens.data(), second.data()).sum;
  EXPECT_GT(std::fabs(apart - together), 1e-3 * std::fabs(apart));
}

TEST(PackedDocuments, RopePositionsRestartAtEachDocument) {
  const ModelConfig c = micro("llama_gqa");
  const int64_t D = c.head_dim(), heads = c.n_heads + 2 * c.n_kv_heads, S = heads * D;
  std::vector<float> cos, sin;
  rope_tables(c, kSeq, cos, sin);
  const Packed p = pack(c.vocab_size);
  test::SplitMix64 rng(9);
  std::vector<float> rows(size_t(kSeq * S));
  for (float& x : rows) x = rng.uniform() - 0.5f;
  NnOps& ops = backend_for(Device::cpu()).nn();
  std::vector<float> packed = rows;
  ops.rope_apply(ActRef(packed.data()), kSeq, RowPositions(kSeq, p.doc_start.data()), heads, D, S, cos.data(),
                 sin.data(), false);
  for (size_t d = 0; d < kDocLengths.size(); ++d) {
    const int64_t n = kDocLengths[d], first = p.first[d];
    std::vector<float> alone(rows.begin() + first * S, rows.begin() + (first + n) * S);
    ops.rope_apply(ActRef(alone.data()), n, n, heads, D, S, cos.data(), sin.data(), false);
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), packed.begin() + first * S)) << "document " << d;
  }
}

TEST(PackedDocuments, StartsThatBreakADocumentAreRefused) {
  const ModelConfig c = micro("gpt2");
  Transformer model(make_spec(c), 1, 8);
  std::vector<int32_t> starts = {0, 0, 0, 3, 3, 2, 6, 6};  // row 5 goes back to a start of 2
  try {
    model.set_document_starts(starts.data());
    FAIL() << "a start that is neither the row nor the row before's was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("document start 2 at row 5 of sequence 0"), std::string::npos) << e.what();
  }
  starts = {1, 1, 1, 3, 3, 3, 6, 6};  // row 0 must start a document
  EXPECT_THROW(model.set_document_starts(starts.data()), Error);
}

// Not a test (no threshold): the step time of documents kept apart against one stream, the same
// tokens, alternating so that a drift in the machine's speed reaches both alike; each side's best
// of the turns. stories260k's shape, 8 sequences of 256: documents of 20 to 200 tokens, and
// starts all 0 (the document path with one document a sequence: its overhead alone).
//   OMP_WAIT_POLICY=passive build/bin/test_packed_documents --gtest_also_run_disabled_tests \
//     --gtest_filter='*StepTime*'
TEST(PackedDocuments, DISABLED_StepTimeDocumentsVsStream) {
  const ModelConfig c = preset_config("stories260k");
  constexpr int64_t B = 8, T = 256, kTurns = 15;
  Transformer model(make_spec(c), B, T);
  model.init_weights(1);
  test::SplitMix64 rng(3);
  std::vector<int32_t> tokens(size_t(B * T)), targets(size_t(B * T)), docs(size_t(B * T)), zeros(size_t(B * T), 0);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = int32_t(rng.next() % uint64_t(c.vocab_size));
    targets[i] = int32_t(rng.next() % uint64_t(c.vocab_size));
  }
  for (int64_t b = 0; b < B; ++b) {
    int64_t start = 0, next = 20 + int64_t(rng.next() % 181);
    for (int64_t t = 0; t < T; ++t) {
      if (t == next) {
        start = t;
        next = t + 20 + int64_t(rng.next() % 181);
      }
      docs[size_t(b * T + t)] = int32_t(start);
    }
  }
  const struct {
    const char* name;
    const int32_t* starts;
  } modes[] = {{"stream (no starts)", nullptr}, {"documents, 20-200 tokens", docs.data()},
               {"documents, one a sequence", zeros.data()}};
  double best[3] = {1e30, 1e30, 1e30};
  for (int turn = 0; turn < kTurns; ++turn) {
    for (int m = 0; m < 3; ++m) {
      model.set_document_starts(modes[m].starts);
      model.zero_grads();
      const auto t0 = std::chrono::steady_clock::now();
      model.forward_backward(tokens.data(), targets.data());
      best[m] = std::min(best[m], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  for (int m = 0; m < 3; ++m) {
    std::printf("%-28s best of %lld: %.4f s, %.0f tokens/s (%+.1f%% vs stream)\n", modes[m].name, (long long)kTurns,
                best[m], double(B * T) / best[m], 100.0 * (best[0] / best[m] - 1.0));
  }
}

}  // namespace
}  // namespace farthing::models
