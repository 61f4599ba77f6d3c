//===- Template.h - A parsed Jinja template, ready to render ----*- C++ -*-===//
//
// Part of Kiln's Jinja engine, written for the chat templates models ship
// (Debian packages no C++ Jinja engine). It renders as Python's jinja2 3.1
// does in the environment Hugging Face transformers builds for
// apply_chat_template: ImmutableSandboxedEnvironment(trim_blocks=True,
// lstrip_blocks=True) with the loopcontrols extension, transformers'
// tojson, raise_exception and strftime_now, and the default Undefined.
//
//   Template t(source, "llama3.jinja");
//   std::string prompt = t.render(context);   // throws TemplateError
//
// The engine depends on nothing but the C++ library and nlohmann's JSON
// (for Value::fromJson), so the runtime can render prompts.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_JINJA_TEMPLATE_H
#define KILN_RUNTIME_JINJA_TEMPLATE_H

#include "runtime/jinja/Value.h"

#include <ctime>
#include <memory>
#include <optional>
#include <string>

namespace kiln::runtime::jinja {

struct Stmt;

struct RenderOptions {
  /// What strftime_now() formats; absent: the current local time.
  std::optional<std::tm> now;
};

class Template {
public:
  /// Parses `source`. Errors are TemplateErrors whose message starts with
  /// "NAME:LINE: ".
  explicit Template(const std::string &source, std::string name = "template");
  ~Template();
  Template(Template &&) noexcept;
  Template &operator=(Template &&) noexcept;

  /// Renders with `context` as the template's variables (besides the
  /// globals). A TemplateError names the template and line at fault, e.g.
  /// "gemma.jinja:1: System role not supported" from raise_exception.
  std::string render(const ValueDict &context,
                     const RenderOptions &options = {}) const;

  const std::string &name() const { return templateName; }

private:
  std::string templateName;
  std::unique_ptr<std::vector<std::unique_ptr<Stmt>>> body;
};

} // namespace kiln::runtime::jinja

#endif // KILN_RUNTIME_JINJA_TEMPLATE_H
