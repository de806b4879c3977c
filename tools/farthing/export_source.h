// export_source.h — what `farthing export` reads, found before anything is written:
//  - the checkpoint --from names: a file or Hugging Face directory as given; a run directory (or
//    its checkpoints/ folder, or its `latest` pointer file) means its newest checkpoint; the word
//    `latest` means the newest checkpoint of a recipe's checkpoint.run_dir, as `eval
//    --checkpoint latest` does. A path that is none of the formats read is refused naming them.
//  - the model a training checkpoint started from (model.path and model.tokenizer of the recipe
//    stored inside it), whose tokenizer files and special token ids the export carries, so the
//    result chats as that model did: a Hugging Face folder's tokenizer_config.json (chat
//    template, bos/eos, special tokens), tokenizer.json and generation_config.json are copied as
//    they are, and its config.json gives the bos/eos/pad ids.
// Relies on: ckpt/h5_checkpoint_dir.h, ckpt/h5_checkpoint_reader.h, train/recipe/recipe.h.
// Tested by: tests/cli/test_export_chat.sh, tests/ckpt/test_export_verb.cpp.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace farthing::cli {

// Every form --from takes, for error messages.
extern const char* const kExportSourceForms;

// --from as given -> the file or directory to read (see the header comment). recipe: the
// --recipe path, needed (and only allowed) for `latest`. Throws naming what was tried.
std::filesystem::path resolve_export_from(const std::string& from, const std::string& recipe);

// The reader read_model_file picks for `path`, as an error message names it.
std::string export_format_tried(const std::filesystem::path& path);

// The model and tokenizer a training run started from, as the recipe stored in its checkpoint
// names them ("" where the recipe has none, or the checkpoint stores no recipe).
struct RunOrigin {
  std::string model_path;
  std::string tokenizer;  // model.tokenizer as written ("" means: the one beside model_path)
};
RunOrigin run_origin(const std::filesystem::path& checkpoint);

// The Hugging Face folder a model path belongs to (the folder itself, or the folder of a
// .safetensors / .index.json / tokenizer.json file) when it holds config.json or
// tokenizer.json; nullopt for GGUF, llama2.c and anything else.
std::optional<std::filesystem::path> hf_folder_of(const std::filesystem::path& model_or_tokenizer);

// bos_token_id, eos_token_id and pad_token_id of folder/config.json (those present and not null).
nlohmann::json hf_special_token_ids(const std::filesystem::path& folder);

// Copies the tokenizer files of a Hugging Face folder that are there (tokenizer.json,
// tokenizer_config.json, special_tokens_map.json, chat_template.jinja, ...) into out, byte for
// byte. Returns their names.
std::string copy_hf_tokenizer_files(const std::filesystem::path& folder, const std::filesystem::path& out);

}  // namespace farthing::cli
