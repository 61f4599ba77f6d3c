//===- ChatTemplate.h - A conversation rendered as a prompt -----*- C++ -*-===//
//
// Part of Kiln. Instruction-tuned models expect their prompt in the shape of
// their chat template (GGUF tokenizer.chat_template, or chat_template in
// tokenizer_config.json). This renders one with the variables Hugging Face
// transformers' apply_chat_template passes: the conversation's members
// (`messages`, `add_generation_prompt`, and any others such as `tools`),
// `bos_token` and `eos_token`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CHATTEMPLATE_H
#define KILN_RUNTIME_CHATTEMPLATE_H

#include "runtime/jinja/Template.h"

#include <nlohmann/json_fwd.hpp>

#include <ctime>
#include <optional>
#include <string>

namespace kiln::runtime {

struct ChatTemplateOptions {
  std::string bosToken = "<s>";
  std::string eosToken = "</s>";
  /// What strftime_now() formats; absent: now.
  std::optional<std::tm> now;
};

/// Renders `chatTemplate` over `conversation`, a JSON object holding
/// `messages` (a list) and optionally `add_generation_prompt` (false when
/// absent) and other variables. Throws std::invalid_argument for a
/// conversation of the wrong shape, jinja::TemplateError when the template
/// fails (e.g. its raise_exception refuses the conversation).
std::string renderChat(const jinja::Template &chatTemplate,
                       const nlohmann::ordered_json &conversation,
                       const ChatTemplateOptions &options);

/// The text of the chat template file `path` (--chat-template), checked to
/// parse: a jinja::TemplateError names the file and line at fault, a file
/// that cannot be read throws std::runtime_error naming it.
std::string readChatTemplateFile(const std::string &path);

/// Midnight of a "YYYY-MM-DD" date; throws std::invalid_argument naming the
/// text otherwise.
std::tm parseIsoDate(const std::string &text);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CHATTEMPLATE_H
