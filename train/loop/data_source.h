// data_source.h — a recipe's data section as the data layer takes it: the DatasetOptions of
// data.*, and the check that data.train and data.eval name files that are there, whose error
// names the key and where it was set (as every recipe error does: "data.train at recipe.yaml:9:10
// is 'chat.jsonl', which does not exist"), before a run directory is touched. Shared by the
// trainer, `farthing data preview` and `farthing init`.
// Relies on: train/recipe/recipe.h, framework/data/dataset_options.h.
// Tested by: tests/cli/test_data_preview.sh (the missing-file errors through train and preview).
#pragma once

#include <string>

#include "framework/data/dataset.h"
#include "framework/data/dataset_options.h"
#include "train/recipe/run_config.h"

namespace farthing::train {

data::DatasetOptions dataset_options(const recipe::RunConfig& config);

// The run's line on how its data was packed: the packing, sequences, documents cut, the share of
// padding, and under stream the dropped tail ("data: packing documents (auto: chat or
// prompt/response data): 60 documents into 14 sequences of 256 tokens; 2 longer than a sequence,
// split; 21.3% of the tokens are padding").
std::string packing_note(const recipe::RunConfig& config, const data::SplitData& data);

// Throws naming the key, where it was set, the path and what was expected, when data.train (or a
// non-empty data.eval) is not a readable file.
void check_data_files(const recipe::RunConfig& config);

}  // namespace farthing::train
