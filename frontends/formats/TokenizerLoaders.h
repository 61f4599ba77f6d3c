//===- TokenizerLoaders.h - Reading vocabularies from files -----*- C++ -*-===//
//
// Part of Kiln. Turns tokenizer files into runtime::TokenizerSpec. Errors are
// FormatError naming the file and what is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_TOKENIZERLOADERS_H
#define KILN_FRONTENDS_FORMATS_TOKENIZERLOADERS_H

#include "frontends/formats/GGUF.h"
#include "frontends/formats/MappedFile.h"
#include "runtime/Tokenizer.h"

#include <memory>
#include <string>

namespace kiln::formats {

/// llama2.c's tokenizer.bin: int32 max_token_length, then per token a float32
/// score, an int32 length and the bytes. `vocabSize` tokens are read (the
/// file does not store the count: the model's vocabulary size decides; pass
/// -1 to read until the end of the file). BOS = 1, EOS = 2, space symbol " ".
runtime::TokenizerSpec loadLlama2cTokenizer(const std::string &path,
                                            int64_t vocabSize = -1);
runtime::TokenizerSpec
loadLlama2cTokenizer(std::shared_ptr<const MappedFile> file,
                     int64_t vocabSize = -1);

/// The vocabulary stored in a GGUF file (tokenizer.ggml.*): model `llama`
/// (ScoreMerge with "▁") or `gpt2` (ByteLevelBPE with tokenizer.ggml.pre),
/// and the chat template tokenizer.chat_template when there is one.
/// Throws if the file has no vocabulary or an unsupported model.
runtime::TokenizerSpec tokenizerFromGGUF(const GGUFFile &gguf);

/// A Hugging Face tokenizer.json (TokenizerJson.cpp), with the
/// tokenizer_config.json beside it when there is one (BOS/EOS as strings or
/// AddedToken objects, add_bos_token, and chat_template: a string, or a
/// list of {"name", "template"} objects of which the one named "default" is
/// taken, none when no entry has that name, as transformers does). BPE models
/// only: byte-level ones (GPT-2, Llama 3, Qwen2: ByteLevelBPE with the file's
/// Split expressions) and SentencePiece-style ones (Llama 2, Mistral:
/// ScoreMerge with "▁", scores from the merge ranks). Anything else, and any
/// malformed value, throws FormatError naming the file and the JSON path at
/// fault (`model.vocab["foo"]`).
runtime::TokenizerSpec tokenizerFromJson(const std::string &path);
/// The same from bytes already mapped (fuzzers, tests); `config` may be null.
runtime::TokenizerSpec
tokenizerFromJson(std::shared_ptr<const MappedFile> file,
                  std::shared_ptr<const MappedFile> config = nullptr);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_TOKENIZERLOADERS_H
