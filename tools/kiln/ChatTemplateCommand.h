//===- ChatTemplateCommand.h - kiln chat-template ---------------*- C++ -*-===//
//
// Part of Kiln's command line. `kiln chat-template TEMPLATE CONVERSATION`
// renders a chat template (a .jinja file) over a conversation and prints the
// prompt, byte for byte, and nothing else; a template that refuses the
// conversation (raise_exception, an undefined variable used as more than
// an empty value) is an error on stderr with the template's line.
//
// The conversation file is one JSON object, as apply_chat_template takes
// it: {"messages": [{"role": ..., "content": ...}, ...],
// "add_generation_prompt": true}; its other members (e.g. "tools") are
// variables of the template too.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_CHATTEMPLATECOMMAND_H
#define KILN_TOOLS_KILN_CHATTEMPLATECOMMAND_H

#include <string>

namespace kiln {

struct ChatTemplateCommandOptions {
  std::string templatePath;
  std::string conversationPath;
  std::string bosToken = "<s>";
  std::string eosToken = "</s>";
  /// YYYY-MM-DD for strftime_now(); empty: today.
  std::string date;
};

int runChatTemplate(const ChatTemplateCommandOptions &options);

} // namespace kiln

#endif // KILN_TOOLS_KILN_CHATTEMPLATECOMMAND_H
