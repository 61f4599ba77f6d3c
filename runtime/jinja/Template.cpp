//===- Template.cpp - A parsed Jinja template, ready to render ------------===//
//
// Part of Kiln's Jinja engine. See Template.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Template.h"

#include "runtime/jinja/Builtins.h"
#include "runtime/jinja/Parser.h"
#include "runtime/jinja/Renderer.h"

namespace kiln::runtime::jinja {

namespace {

/// `error` with "NAME:LINE: " in front of its message.
TemplateError located(const std::string &name, const TemplateError &error) {
  std::string where = name;
  if (error.line > 0)
    where += ":" + std::to_string(error.line);
  return TemplateError(where + ": " + error.what(), error.line);
}

} // namespace

Template::Template(const std::string &source, std::string name)
    : templateName(std::move(name)) {
  try {
    body = std::make_unique<Body>(parseTemplate(lexTemplate(source)));
  } catch (const TemplateError &e) {
    throw located(templateName, e);
  } catch (const std::exception &e) {
    // A number literal out of range and the like.
    throw located(templateName, TemplateError(e.what()));
  }
}

Template::~Template() = default;
Template::Template(Template &&) noexcept = default;
Template &Template::operator=(Template &&) noexcept = default;

std::string Template::render(const ValueDict &context,
                             const RenderOptions &options) const {
  try {
    Renderer renderer(makeGlobals(options.now));
    return renderer.render(*body, context);
  } catch (const TemplateError &e) {
    throw located(templateName, e);
  }
}

} // namespace kiln::runtime::jinja
