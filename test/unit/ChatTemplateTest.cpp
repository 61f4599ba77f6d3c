//===- ChatTemplateTest.cpp - Real chat templates against jinja2 ----------===//
//
// Part of Kiln's unit tests. The 17 chat templates of ../shared/chat-templates
// (Llama 3.x, Qwen 2.5, Mistral, Phi, Gemma, DeepSeek, Command R, Hermes,
// Functionary, Firefunction) over its three conversations must render
// byte for byte as renderings.json says Python's jinja2 renders them, and
// fail where jinja2 fails, with jinja2's message. test/chat-templates/
// compares more conversations with jinja2 itself at test time.
//
//===----------------------------------------------------------------------===//

#include "runtime/ChatTemplate.h"

#include "TestData.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

using namespace kiln::runtime;

namespace {

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// jinja2's message without the Python exception class in front
/// ("UndefinedError: 'x' is undefined" -> "'x' is undefined").
std::string withoutExceptionClass(const std::string &message) {
  size_t colon = message.find(": ");
  if (colon != std::string::npos && colon >= 5 &&
      message.compare(colon - 5, 5, "Error") == 0 && message.find(' ') > colon)
    return message.substr(colon + 2);
  return message;
}

TEST(ChatTemplates, RenderAsRenderingsJsonSays) {
  std::string dir = kiln::test::chatTemplatesDir();
  KILN_REQUIRE_TEST_FILE(dir + "/renderings.json");
  auto conversations =
      nlohmann::ordered_json::parse(readText(dir + "/conversations.json"));
  auto renderings =
      nlohmann::ordered_json::parse(readText(dir + "/renderings.json"));

  ChatTemplateOptions options;
  options.bosToken = "<s>";
  options.eosToken = "</s>";
  options.now = parseIsoDate("2026-01-02");

  std::set<std::string> templates;
  size_t cases = 0, errors = 0;
  for (const auto &c : renderings.at("cases")) {
    std::string name = c.at("template");
    std::string conversationName = c.at("conversation");
    SCOPED_TRACE(name + " over " + conversationName);
    templates.insert(name);
    ++cases;
    nlohmann::ordered_json conversation;
    for (const auto &candidate : conversations)
      if (candidate.at("name") == conversationName)
        conversation = candidate;
    ASSERT_TRUE(conversation.is_object());
    conversation.erase("name");

    std::string output, error;
    try {
      jinja::Template chatTemplate(readText(dir + "/" + name), name);
      output = renderChat(chatTemplate, conversation, options);
    } catch (const jinja::TemplateError &e) {
      error = e.what();
    }
    if (c.contains("error")) {
      ++errors;
      std::string expected = withoutExceptionClass(c.at("error"));
      EXPECT_NE(error.find(expected), std::string::npos)
          << "expected an error saying \"" << expected << "\", got "
          << (error.empty() ? "the text:\n" + output : "\"" + error + "\"");
      // The message says where: the template and its line.
      EXPECT_EQ(error.rfind(name + ":", 0), 0u) << error;
    } else {
      EXPECT_EQ(error, "");
      EXPECT_EQ(output, c.at("output").get<std::string>());
    }
  }
  // All of the data was there: 17 templates over 3 conversations, 4 of the
  // renderings failing in jinja2.
  EXPECT_EQ(templates.size(), 17u);
  EXPECT_EQ(cases, 51u);
  EXPECT_EQ(errors, 4u);
}

TEST(ChatTemplates, ConversationMustHaveMessages) {
  jinja::Template t("{{ messages|length }}", "t");
  ChatTemplateOptions options;
  EXPECT_EQ(renderChat(t, nlohmann::ordered_json::parse(R"({"messages": []})"),
                       options),
            "0");
  EXPECT_THROW(renderChat(t, nlohmann::ordered_json::parse("[]"), options),
               std::invalid_argument);
  EXPECT_THROW(renderChat(t,
                          nlohmann::ordered_json::parse(R"({"messages": {}})"),
                          options),
               std::invalid_argument);
  EXPECT_THROW(
      renderChat(t,
                 nlohmann::ordered_json::parse(
                     R"({"messages": [], "add_generation_prompt": 1})"),
                 options),
      std::invalid_argument);
}

TEST(ChatTemplates, ContextHasTokensAndExtraVariables) {
  jinja::Template t("{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt "
                    "}}|{{ tools[0].name }}",
                    "t");
  ChatTemplateOptions options;
  options.bosToken = "<|begin_of_text|>";
  options.eosToken = "<|eot_id|>";
  EXPECT_EQ(renderChat(t,
                       nlohmann::ordered_json::parse(
                           R"({"messages": [], "tools": [{"name": "f"}]})"),
                       options),
            "<|begin_of_text|>|<|eot_id|>|False|f");
}

} // namespace
