//===- ChatTemplate.cpp - A conversation rendered as a prompt -------------===//
//
// Part of Kiln. See ChatTemplate.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/ChatTemplate.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kiln::runtime {

std::string renderChat(const jinja::Template &chatTemplate,
                       const nlohmann::ordered_json &conversation,
                       const ChatTemplateOptions &options) {
  if (!conversation.is_object())
    throw std::invalid_argument(
        "a conversation is a JSON object with \"messages\" and "
        "\"add_generation_prompt\", not JSON of type " +
        std::string(conversation.type_name()));
  auto messages = conversation.find("messages");
  if (messages == conversation.end() || !messages->is_array())
    throw std::invalid_argument(
        "the conversation has no \"messages\" list of {\"role\", "
        "\"content\"} objects");
  auto prompt = conversation.find("add_generation_prompt");
  if (prompt != conversation.end() && !prompt->is_boolean())
    throw std::invalid_argument(
        "the conversation's \"add_generation_prompt\" is not true or false");

  jinja::ValueDict context;
  for (const auto &[key, value] : conversation.items())
    context.set(key, jinja::Value::fromJson(value));
  if (prompt == conversation.end())
    context.set("add_generation_prompt", jinja::Value(false));
  context.set("bos_token", jinja::Value(options.bosToken));
  context.set("eos_token", jinja::Value(options.eosToken));

  jinja::RenderOptions renderOptions;
  renderOptions.now = options.now;
  return chatTemplate.render(context, renderOptions);
}

std::string readChatTemplateFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read the chat template " + path);
  std::ostringstream text;
  text << in.rdbuf();
  jinja::Template parsed(text.str(), path);
  return text.str();
}

std::tm parseIsoDate(const std::string &text) {
  int year = 0, month = 0, day = 0;
  char end = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c", &year, &month, &day, &end) !=
          3 ||
      text.size() != 10 || month < 1 || month > 12 || day < 1 || day > 31)
    throw std::invalid_argument("date '" + text + "' is not a YYYY-MM-DD date");
  std::tm time = {};
  time.tm_year = year - 1900;
  time.tm_mon = month - 1;
  time.tm_mday = day;
  // timegm fills in the weekday and day of the year (for %a, %j) and says
  // whether the day exists.
  std::tm normalized = time;
  std::time_t seconds = timegm(&normalized);
  if (seconds == std::time_t(-1) || normalized.tm_mday != day)
    throw std::invalid_argument("date '" + text + "' does not exist");
  return normalized;
}

} // namespace kiln::runtime
