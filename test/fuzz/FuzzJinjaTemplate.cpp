//===- FuzzJinjaTemplate.cpp - libFuzzer target: chat templates -----------===//
//
// Part of Kiln. Chat templates come from model files, so any bytes given to
// the Jinja engine either parse and render over a small conversation or
// throw a TemplateError; nothing else.
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Template.h"

#include <nlohmann/json.hpp>

using namespace kiln::runtime::jinja;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const ValueDict context =
      Value::fromJson(nlohmann::ordered_json::parse(R"({
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": " Hi <s> {{ x }}\n"},
                     {"role": "assistant", "content": ""}],
        "add_generation_prompt": true,
        "bos_token": "<s>", "eos_token": "</s>"})"))
          .asDict();
  try {
    Template chatTemplate(
        std::string(reinterpret_cast<const char *>(data), size), "fuzz");
    RenderOptions options;
    options.now = std::tm{};
    (void)chatTemplate.render(context, options);
  } catch (const TemplateError &) {
  }
  return 0;
}
