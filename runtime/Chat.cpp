//===- Chat.cpp - A conversation with a model -----------------------------===//
//
// Part of Kiln. See Chat.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/Chat.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace kiln::runtime {

// Meta's Llama-2-chat template, byte for byte (its tokenizer_config.json),
// split into lines here only for reading: the Jinja source has none.
const char *const kDefaultChatTemplate =
    "{% if messages[0]['role'] == 'system' %}"
    "{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}"
    "{% else %}"
    "{% set loop_messages = messages %}"
    "{% set system_message = false %}"
    "{% endif %}"
    "{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}"
    "{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + "
    "message['content'] %}"
    "{% else %}"
    "{% set content = message['content'] %}"
    "{% endif %}"
    "{% if message['role'] == 'user' %}"
    "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}"
    "{{ ' '  + content.strip() + ' ' + eos_token }}"
    "{% endif %}"
    "{% endfor %}";

namespace {

std::string pieceAt(const TokenizerSpec &spec, int32_t id) {
  return id >= 0 && static_cast<size_t>(id) < spec.tokens.size()
             ? spec.tokens[id]
             : std::string();
}

} // namespace

std::string chatBosToken(const TokenizerSpec &spec) {
  return pieceAt(spec, spec.bosId);
}

std::string chatEosToken(const TokenizerSpec &spec) {
  return pieceAt(spec, spec.eosId);
}

const std::vector<std::string> &endOfTurnTokenNames() {
  static const std::vector<std::string> names = {
      "<|eot_id|>",    "<|eom_id|>",     "<|im_end|>",
      "<end_of_turn>", "<|end|>",        "<|END_OF_TURN_TOKEN|>",
      "<|endoftext|>", "<|end_of_text|>"};
  return names;
}

std::vector<int32_t> endOfTurnTokens(const TokenizerSpec &spec) {
  std::vector<int32_t> ids;
  for (int32_t id : {spec.eosId, spec.eotId})
    if (id >= 0)
      ids.push_back(id);
  const std::vector<std::string> &names = endOfTurnTokenNames();
  for (size_t id = 0; id < spec.tokens.size(); ++id)
    if (std::find(names.begin(), names.end(), spec.tokens[id]) != names.end())
      ids.push_back(static_cast<int32_t>(id));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

Chat::Chat(const Tokenizer &tokenizer)
    : Chat(tokenizer,
           tokenizer.spec().chatTemplate.empty()
               ? std::string(kDefaultChatTemplate)
               : tokenizer.spec().chatTemplate,
           tokenizer.spec().chatTemplate.empty()
               ? "Kiln's default chat template"
               : "the model's chat template") {
  isDefault = tokenizer.spec().chatTemplate.empty();
}

Chat::Chat(const Tokenizer &tokenizer, const std::string &source,
           const std::string &name)
    : tokenizer(tokenizer), chatTemplate(source, name) {
  renderOptions.bosToken = chatBosToken(tokenizer.spec());
  renderOptions.eosToken = chatEosToken(tokenizer.spec());
}

void Chat::addMessage(std::string role, std::string content) {
  turns.emplace_back(std::move(role), std::move(content));
}

std::string Chat::prompt() const {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const auto &[role, content] : turns)
    messages.push_back({{"role", role}, {"content", content}});
  nlohmann::ordered_json conversation = {{"messages", messages},
                                         {"add_generation_prompt", true}};
  return renderChat(chatTemplate, conversation, renderOptions);
}

std::vector<int32_t> Chat::encodePrompt() const {
  std::string text = prompt();
  bool addBos = tokenizer.spec().addBos;
  if (tokenizer.parsesSpecial())
    return tokenizer.encode(text, addBos);
  // --no-parse-special: the template's markup still gives its control
  // tokens; each message's content, found in order in the rendering (as
  // written, else trimmed, as templates often trim it), stays text.
  std::vector<Tokenizer::TextSpan> literal;
  size_t from = 0;
  for (size_t i = 0; i < turns.size(); ++i) {
    const std::string &content = turns[i].second;
    size_t first = content.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
      continue; // nothing a control token could hide in
    size_t last = content.find_last_not_of(" \t\r\n");
    std::string trimmed = content.substr(first, last - first + 1);
    size_t at = text.find(content, from), length = content.size();
    if (at == std::string::npos) {
      at = text.find(trimmed, from);
      length = trimmed.size();
    }
    if (at == std::string::npos)
      throw std::invalid_argument(
          "--no-parse-special: message " + std::to_string(i + 1) + " (" +
          turns[i].first +
          ") does not appear in the prompt the chat template rendered (the "
          "template rewrites it), so its text cannot be kept apart from the "
          "template's control tokens");
    literal.push_back({at, length});
    from = at + length;
  }
  return tokenizer.encode(text, addBos, literal);
}

ChatReply Chat::respond(const StepFunction &step,
                        const ChatReplyOptions &options,
                        const std::function<void(const std::string &)> &emit) {
  std::vector<int32_t> ids = encodePrompt();
  if (ids.empty())
    throw std::invalid_argument(
        "the chat template rendered an empty prompt for the conversation");

  GenerationOptions generation;
  // The last position sampled from is steps: the first reply token is
  // sampled at position ids.size().
  generation.steps =
      static_cast<int32_t>(ids.size()) + std::max(options.maxTokens, 1) - 1;
  generation.contextLength = options.contextLength;
  generation.stopTokens = endOfTurnTokens(tokenizer.spec());
  generation.sampler = options.sampler;
  generation.echoPrompt = false;

  ChatReply reply;
  reply.generation = generateFromIds(tokenizer, step, ids, generation, emit);
  const GenerationResult &result = reply.generation;
  reply.endedTurn = result.stopToken >= 0;
  std::vector<int32_t> generated;
  if (result.tokens.size() > ids.size())
    generated.assign(result.tokens.begin() + ids.size(), result.tokens.end());
  reply.text = tokenizer.decode(generated);
  addMessage("assistant", reply.text);
  return reply;
}

} // namespace kiln::runtime
