// data_source.h — a recipe's data section as the data layer takes it: the DatasetOptions of
// data.*, and the check that data.train and data.eval name files that are there, whose error
// names the key and where it was set (as every recipe error does: "data.train at recipe.yaml:9:10
// is 'chat.jsonl', which does not exist"), before a run directory is touched. Shared by the
// trainer, `farthing data preview` and `farthing init`.
// Relies on: train/recipe/recipe.h, framework/data/dataset_options.h.
// Tested by: tests/cli/test_data_preview.sh (the missing-file errors through train and preview).
#pragma once

#include "framework/data/dataset_options.h"
#include "train/recipe/run_config.h"

namespace farthing::train {

data::DatasetOptions dataset_options(const recipe::RunConfig& config);

// Throws naming the key, where it was set, the path and what was expected, when data.train (or a
// non-empty data.eval) is not a readable file.
void check_data_files(const recipe::RunConfig& config);

}  // namespace farthing::train
