// data_sizing.h — what `farthing init` writes for a data set: data.seq_len, data.eval_fraction,
// the sequences one optimizer step takes and train.steps, from the documents' lengths. Every
// count of sequences is the trainer's own (document_packing.h packed_sequences) under the
// recipe's data.packing: documents and none pad each sequence's end, so they make more
// sequences of the same tokens than a stream does.
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
// Relies on: framework/data/document_packing.h (packed_sequences). Tested by: tests/train/plan/test_data_sizing.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "framework/data/document_packing.h"

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

// documents: tokens of each document as packed (BOS/EOS included), in file order, and where each
// is (for pack_documents' errors). packing and long_documents: the recipe's (packing resolved,
// not auto). Throws as pack_documents does (a document of one token; one too long under error).
DataSizing size_to_data(const data::DocumentExtents& documents, int64_t seq_len_cap,
                        data::Packing packing = data::Packing::kStream,
                        data::LongDocuments long_documents = data::LongDocuments::kSplit);

}  // namespace farthing::train
