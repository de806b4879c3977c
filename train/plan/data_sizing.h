// data_sizing.h — what `farthing init` writes for a data set: data.seq_len, data.eval_fraction,
// the sequences one optimizer step takes and train.steps, from the documents' lengths.
//   seq_len         the smallest power of two (at least 32) holding 90% of the documents whole,
//                   at most `seq_len_cap` (the model's context, or the memory ladder's rung); then
//                   halved while the data packs into fewer than 8 sequences, so that a small data
//                   set still gives a split and several steps an epoch.
//   eval_fraction   0.05 once that holds out at least one sequence (20+ sequences); one sequence
//                   (1/N) from 4 sequences up; none below 4 (nothing could be spared).
//   step_sequences  a quarter of the training split, between 1 and 8: at least four steps an
//                   epoch, and never more sequences a step than the split holds.
//   steps           3 epochs below 10M training tokens (fine-tuning sets are small and see
//                   each example a few times), 1 above; at most 100,000.
// Relies on: framework/data/packing.h (packed_sequence_count). Tested by: tests/train/plan/test_data_sizing.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace farthing::train {

struct DataSizing {
  int64_t seq_len = 0;
  double eval_fraction = 0.0;
  int64_t sequences = 0, train_sequences = 0, eval_sequences = 0;
  int64_t step_sequences = 0;  // micro_batch x grad_accum the recipe should give
  int64_t steps = 0;
  double epochs = 0.0;         // steps x step_sequences / train_sequences
  std::string why;             // one line: the numbers these came from
};

// document_lengths: tokens of each document as packed (BOS/EOS included), in file order.
DataSizing size_to_data(std::span<const int64_t> document_lengths, int64_t seq_len_cap);

}  // namespace farthing::train
