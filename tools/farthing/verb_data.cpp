// verb_data.cpp — `farthing data preview RECIPE [--set key=value]... [--examples N] [--max-tokens N]`:
// the recipe's training data as the trainer sees it, before a run. The first N documents of
// data.train, rendered token by token from the ids the trainer packs (chat templates applied,
// BOS/EOS as data.add_bos/add_eos add them), with the tokens that carry loss between ⟦ and ⟧;
// then the counts: documents, tokens, sequences (train and held out), trained tokens, padding
// (none: sequences are packed back to back), documents cut by a sequence boundary, tokens dropped
// after the last whole sequence, and how one step compares with the training split.
// The tokenizer and model are found as `farthing train` finds them (model_source.h); nothing is
// written.
// Relies on: train/loop/data_source.h, train/loop/model_source.h, framework/data/dataset_documents.h.
// Tested by: tests/cli/test_data_preview.sh.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/data/dataset.h"
#include "framework/data/dataset_chat.h"
#include "framework/data/dataset_documents.h"
#include "train/loop/data_source.h"
#include "train/loop/model_source.h"
#include "train/recipe/recipe.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

namespace {

struct PreviewArgs {
  std::string recipe;
  std::vector<std::string> overrides;
  int64_t examples = 3, max_tokens = 400;
};

constexpr const char* kOpen = "\xE2\x9F\xA6";   // ⟦
constexpr const char* kClose = "\xE2\x9F\xA7";  // ⟧

// The document's tokens as text, the trained runs between ⟦ ⟧; a token's mask says whether
// predicting it counts.
std::string rendered(const farthing::data::DataDocument& doc, const farthing::data::Tokenizer& tok, int64_t max_tokens) {
  std::string out;
  bool open = false;
  const size_t shown = std::min(doc.tokens.size(), size_t(max_tokens));
  for (size_t i = 0; i < shown; ++i) {
    const bool trained = doc.loss_mask[i] != 0;
    if (trained != open) out += trained ? kOpen : kClose;
    open = trained;
    out += tok.token_bytes(doc.tokens[i]);
  }
  if (open) out += kClose;
  if (shown < doc.tokens.size()) out += "\n... (" + std::to_string(doc.tokens.size() - shown) + " more tokens)";
  return out;
}

std::string percent(int64_t part, int64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", whole > 0 ? 100.0 * double(part) / double(whole) : 0.0);
  return text;
}

int run_preview(const PreviewArgs& a) {
  const int64_t examples = a.examples, max_tokens = a.max_tokens;
  const farthing::recipe::RunConfig config = farthing::recipe::load_recipe(a.recipe, a.overrides);
  farthing::train::check_data_files(config);
  const farthing::data::DatasetOptions options = farthing::train::dataset_options(config);
  const bool token_file = farthing::data::dataset_format(config.data.train, options.format) ==
                          farthing::data::DataFormat::kTokens;
  const farthing::train::ModelSource source = farthing::train::open_model_source(config.model, !token_file);
  FARTHING_CHECK(source.tokenizer, "farthing data preview: ", config.data.train,
                 " is a token file and the model names no tokenizer to show its ids as text; set model.tokenizer");
  const farthing::data::Tokenizer& tok = *source.tokenizer;

  // The examples are printed once the whole file has been read and packed, so that a data error
  // is the only line a refused preview prints.
  std::string shown;
  farthing::data::DocumentExtents documents{config.data.train, {}, {}};
  std::vector<uint8_t> mask;
  std::vector<std::string> kinds;
  bool has_chat = false;
  farthing::data::for_each_document(config.data.train, options, &tok, source.config.vocab_size,
                                    [&](const farthing::data::DataDocument& doc) {
    if (int64_t(documents.lengths.size()) < examples) {
      int64_t trained = 0;
      for (uint8_t m : doc.loss_mask) trained += m;
      shown += "\n--- " + doc.where + " (" + doc.kind + "): " + std::to_string(doc.tokens.size()) + " tokens, " +
               std::to_string(trained) + " trained ---\n" + rendered(doc, tok, max_tokens) + "\n";
    }
    has_chat = has_chat || doc.kind == "messages";
    if (std::find(kinds.begin(), kinds.end(), doc.kind) == kinds.end()) kinds.push_back(doc.kind);
    documents.lengths.push_back(int64_t(doc.tokens.size()));
    documents.lines.push_back(doc.line);
    mask.insert(mask.end(), doc.loss_mask.begin(), doc.loss_mask.end());
  });
  const double eval_fraction = config.data.eval.empty() ? config.data.eval_fraction : 0.0;
  // data.packing auto, resolved as the trainer resolves it: documents for examples.
  const bool has_examples = std::find_if(kinds.begin(), kinds.end(), [](const std::string& k) {
                          return k == "messages" || k == "prompt/response";
                        }) != kinds.end();
  using farthing::data::Packing;
  const Packing packing = config.data.packing != Packing::kAuto ? config.data.packing
                          : has_examples                        ? Packing::kDocuments
                                                                : Packing::kStream;
  const bool stream = packing == Packing::kStream;
  const farthing::data::PackingSummary s = farthing::data::summarize_packing(
      documents, mask, config.data.seq_len, eval_fraction, packing, config.data.long_documents);
  std::printf("data.train %s, seq_len %lld, add_bos %s, add_eos %s, chat_template %s\n", config.data.train.c_str(),
              (long long)config.data.seq_len, config.data.add_bos ? "true" : "false",
              config.data.add_eos ? "true" : "false", config.data.chat_template.c_str());
  std::printf("%s%s marks the tokens that carry loss (the model learns to predict them)\n", kOpen, kClose);
  std::printf("%s", shown.c_str());
  std::string kind_list;
  for (const std::string& k : kinds) kind_list += (kind_list.empty() ? "" : ", ") + k;
  std::printf("\ncounts (data.train %s):\n", config.data.train.c_str());
  std::printf("  documents       %lld (%s); longest %lld tokens, median %lld\n", (long long)s.documents,
              kind_list.c_str(), (long long)s.longest_document, (long long)s.median_document);
  if (has_chat) {
    const farthing::data::ChatTemplate chat = farthing::data::resolve_chat_template(options.chat_template, tok);
    std::printf("  chat template   %s\n", chat.format() ? std::string(farthing::data::chat_format_name(*chat.format())).c_str()
                                                         : "a Jinja template (interpreted)");
  }
  std::printf("  tokens          %lld (with the BOS/EOS that data.add_bos/add_eos add)\n", (long long)s.tokens);
  std::printf("  sequences       %lld of seq_len %lld: %lld to train on, %lld held out%s\n", (long long)s.sequences,
              (long long)config.data.seq_len, (long long)s.train_sequences, (long long)s.eval_sequences,
              config.data.eval.empty() ? " (data.eval_fraction)" : " (data.eval is a file of its own)");
  const int64_t train_targets = s.train_sequences * config.data.seq_len;
  std::printf("  trained tokens  %lld of the training split's %lld targets (%s); %lld in the held-out split\n",
              (long long)s.train_trained_tokens, (long long)train_targets,
              percent(s.train_trained_tokens, train_targets).c_str(), (long long)s.eval_trained_tokens);
  std::printf("  packing         %s%s\n", std::string(farthing::recipe::enum_name(packing)).c_str(),
              stream ? ": one stream cut into sequences, documents seeing those before them"
                     : ": each document sees only itself, positions restarting at its start");
  if (stream) {
    std::printf("  padding         %lld tokens (sequences are packed back to back)\n", (long long)s.padding_tokens);
    std::printf("  documents cut   %lld of %lld start in one sequence and end in the next\n",
                (long long)s.documents_cut, (long long)s.documents);
    std::printf("  dropped         %lld tokens after the last whole sequence (%lld document(s) wholly or partly)\n",
                (long long)s.tokens_dropped, (long long)s.documents_dropped);
  } else {
    std::printf("  padding         %lld tokens, %s of the sequences' %lld (no loss, no attention)\n",
                (long long)s.padding_tokens, percent(s.padding_tokens, s.sequences * config.data.seq_len).c_str(),
                (long long)(s.sequences * config.data.seq_len));
    std::printf("  documents cut   %lld of %lld longer than a sequence (data.long_documents %s)\n",
                (long long)s.documents_cut, (long long)s.documents,
                std::string(farthing::recipe::enum_name(config.data.long_documents)).c_str());
    std::printf("  dropped         %lld tokens cut off long documents (nothing else: the last sequence is padded)\n",
                (long long)s.tokens_dropped);
  }
  const int64_t step = config.train.micro_batch * config.train.grad_accum;
  std::printf("  one step        %lld sequences (train.micro_batch %lld x train.grad_accum %lld, per rank)%s\n",
              (long long)step, (long long)config.train.micro_batch, (long long)config.train.grad_accum,
              step > s.train_sequences ? " -- MORE than the training split holds: each step repeats sequences" : "");
  if (s.sequences == 0) {
    std::printf("farthing data preview: %s packs into no sequence of seq_len %lld; training would fail: use a "
                "shorter data.seq_len or more data\n", config.data.train.c_str(), (long long)config.data.seq_len);
  }
  return 0;
}

VerbRun define_data(CLI::App& verb) {
  verb.require_subcommand(1);
  CLI::App& preview = *verb.add_subcommand("preview",
                                           "the recipe's data.train as the trainer sees it: the first documents\n"
                                           "rendered with their trained spans marked, then the counts")
                           ->group("Subcommands");
  auto a = std::make_shared<PreviewArgs>();
  preview.add_option("RECIPE", a->recipe, "a YAML recipe (as for farthing train)")->required();
  farthing::cli::add_set_option(preview, a->overrides);
  preview.add_option("--examples", a->examples, "documents to render (0: counts only)")
      ->type_name("N")
      ->capture_default_str()
      ->check(farthing::cli::whole_number_at_least(0));
  preview.add_option("--max-tokens", a->max_tokens, "tokens shown of each document (the rest is counted)")
      ->type_name("N")
      ->capture_default_str()
      ->check(farthing::cli::whole_number_at_least(0));
  preview.footer(
      "The first N documents of data.train rendered from the token ids the trainer packs, chat template and\n"
      "BOS/EOS included, with the tokens that carry loss between \xE2\x9F\xA6 and \xE2\x9F\xA7; then the counts: tokens, trained\n"
      "tokens, padding, documents cut by a sequence boundary, tokens dropped, sequences for training and\n"
      "held out. Nothing is written.");
  return [a] { return run_preview(*a); };
}

const VerbRegistration kData{"data", "the recipe's training data as the trainer sees it (data preview)",
                             define_data};

}  // namespace
