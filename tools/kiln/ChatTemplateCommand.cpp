//===- ChatTemplateCommand.cpp - kiln chat-template -----------------------===//
//
// Part of Kiln's command line. See ChatTemplateCommand.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/ChatTemplateCommand.h"

#include "runtime/ChatTemplate.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kiln {

namespace {

std::string readConversation(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read the conversation " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

int runChatTemplate(const ChatTemplateCommandOptions &options) {
  runtime::jinja::Template chatTemplate(
      runtime::readChatTemplateFile(options.templatePath),
      options.templatePath);
  nlohmann::ordered_json conversation;
  try {
    conversation = nlohmann::ordered_json::parse(
        readConversation(options.conversationPath));
  } catch (const nlohmann::json::parse_error &e) {
    throw std::runtime_error(options.conversationPath +
                             ": not JSON: " + e.what());
  }
  runtime::ChatTemplateOptions chat;
  chat.bosToken = options.bosToken;
  chat.eosToken = options.eosToken;
  if (!options.date.empty())
    chat.now = runtime::parseIsoDate(options.date);
  std::string prompt;
  try {
    prompt = runtime::renderChat(chatTemplate, conversation, chat);
  } catch (const std::invalid_argument &e) {
    throw std::runtime_error(options.conversationPath + ": " + e.what());
  }
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  return 0;
}

} // namespace kiln
