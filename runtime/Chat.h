//===- Chat.h - A conversation with a model ---------------------*- C++ -*-===//
//
// Part of Kiln. `kiln run --chat`: the conversation so far is rendered with
// the model's chat template (ChatTemplate.h) and add_generation_prompt, the
// prompt is encoded with its control tokens (Tokenizer::encode parses
// them), and the reply is generated until an end-of-turn token
// (endOfTurnTokens) and kept as the assistant's turn.
//
// Which template: the one given (--chat-template), else the model's own
// (TokenizerSpec::chatTemplate), else kDefaultChatTemplate. The template's
// bos_token and eos_token are the vocabulary's BOS and EOS pieces: the
// importers resolve tokenizer_config.json's strings to those ids.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CHAT_H
#define KILN_RUNTIME_CHAT_H

#include "runtime/ChatTemplate.h"
#include "runtime/Generator.h"
#include "runtime/Tokenizer.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::runtime {

/// The template of a model that has none: Llama 2's chat format
/// (`<s>[INST] <<SYS>>\n...\n<</SYS>>\n\nHi [/INST] Hello </s>`), as
/// Meta's tokenizer_config.json for Llama-2-chat writes it. Chosen over
/// ChatML because its markup is plain text around the vocabulary's own BOS
/// and EOS, which every vocabulary Kiln reads has, and a reply ends with
/// EOS, the one stop every model knows; ChatML's <|im_start|> and
/// <|im_end|> would be plain characters in a vocabulary without them, and
/// the model could never produce the single token that ends its turn.
extern const char *const kDefaultChatTemplate;

/// The text a chat template's bos_token / eos_token stands for: the piece
/// at the vocabulary's BOS / EOS id, "" when it has none.
std::string chatBosToken(const TokenizerSpec &spec);
std::string chatEosToken(const TokenizerSpec &spec);

/// The names of tokens that end a turn in the chat formats Kiln knows:
/// <|eot_id|> and <|eom_id|> (Llama 3), <|im_end|> (ChatML: Qwen, Hermes),
/// <end_of_turn> (Gemma), <|end|> (Phi-3), <|END_OF_TURN_TOKEN|> (Command
/// R), <|endoftext|> and <|end_of_text|> (end of text where it is not EOS).
const std::vector<std::string> &endOfTurnTokenNames();

/// The ids a chat reply stops at: the vocabulary's EOS, its EOT (as the
/// importer named it) and every token whose piece is exactly one of
/// endOfTurnTokenNames(), whatever its type. Sorted, without repeats.
std::vector<int32_t> endOfTurnTokens(const TokenizerSpec &spec);

struct ChatReplyOptions {
  int32_t maxTokens = 256;   ///< Tokens the reply may have at most.
  int32_t contextLength = 0; ///< Positions the model may use.
  SamplerOptions sampler;
};

struct ChatReply {
  std::string text;            ///< The reply, as kept in the conversation.
  GenerationResult generation; ///< The prompt and the reply's tokens.
  /// Stopped at an end-of-turn token (or BOS), not at the token limit or
  /// the context's end.
  bool endedTurn = false;
};

class Chat {
public:
  /// A chat over `tokenizer` (which must outlive it) with the model's own
  /// template, or kDefaultChatTemplate when it has none.
  explicit Chat(const Tokenizer &tokenizer);
  /// A chat with the template `source`, named `name` in errors.
  Chat(const Tokenizer &tokenizer, const std::string &source,
       const std::string &name);

  /// Whether the template is Kiln's default (the model has none and none
  /// was given).
  bool usesDefaultTemplate() const { return isDefault; }

  /// Appends a turn ("system", "user" or "assistant").
  void addMessage(std::string role, std::string content);
  const std::vector<std::pair<std::string, std::string>> &messages() const {
    return turns;
  }

  /// The conversation so far, rendered with add_generation_prompt = true.
  /// Throws jinja::TemplateError when the template refuses it.
  std::string prompt() const;
  /// prompt()'s token ids: control-token text becomes control tokens (with
  /// the tokenizer's parseSpecial off, only in the template's markup: the
  /// messages' contents stay text) and BOS is added only when the
  /// vocabulary adds one and the template did not write it.
  std::vector<int32_t> encodePrompt() const;

  /// Generates the assistant's turn for the conversation so far (which
  /// ends with the user's turn) from the whole conversation, a prefill from
  /// position 0 (the caller clears the sequence's KV cache first), streams
  /// its pieces to `emit` and adds it to the conversation.
  ChatReply respond(const StepFunction &step, const ChatReplyOptions &options,
                    const std::function<void(const std::string &)> &emit);

private:
  const Tokenizer &tokenizer;
  jinja::Template chatTemplate;
  bool isDefault = false;
  ChatTemplateOptions renderOptions;
  std::vector<std::pair<std::string, std::string>> turns;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CHAT_H
