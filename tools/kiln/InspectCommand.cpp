//===- InspectCommand.cpp - kiln inspect ----------------------------------===//
//
// Part of Kiln's command line. See InspectCommand.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/InspectCommand.h"

#include "frontends/Importer.h"
#include "frontends/formats/ElementType.h"
#include "runtime/Artifact.h"
#include "runtime/Chat.h"
#include "runtime/CompiledModel.h"
#include "runtime/TokenizerSpecJson.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <stdexcept>

namespace kiln {

namespace {

/// `text` as a JSON string literal: quoted, newlines and control characters
/// escaped, bytes that are not UTF-8 replaced.
std::string quoted(const std::string &text) {
  return nlohmann::json(text).dump(-1, ' ', false,
                                   nlohmann::json::error_handler_t::replace);
}

/// The first `maxBytes` bytes of `line`, cut before a UTF-8 character that
/// would not fit, with "..." when cut.
std::string shortened(const std::string &line, size_t maxBytes) {
  if (line.size() <= maxBytes)
    return line;
  size_t end = maxBytes;
  while (end > 0 && (static_cast<unsigned char>(line[end]) & 0xC0) == 0x80)
    --end;
  return line.substr(0, end) + "...";
}

/// The template's size and first lines: enough to recognize it (ChatML,
/// [INST], <|start_header_id|>) without printing pages of Jinja.
void printChatTemplate(const std::string &source) {
  constexpr size_t kLinesShown = 8, kLineBytes = 100;
  if (source.empty()) {
    std::printf("chat template: none (kiln run --chat uses Kiln's default, "
                "Llama 2's [INST] format)\n");
    return;
  }
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin <= source.size()) {
    size_t end = source.find('\n', begin);
    if (end == std::string::npos)
      end = source.size();
    lines.push_back(source.substr(begin, end - begin));
    begin = end + 1;
  }
  if (lines.size() > 1 && lines.back().empty())
    lines.pop_back();
  std::printf("chat template: %zu bytes, %zu line%s\n", source.size(),
              lines.size(), lines.size() == 1 ? "" : "s");
  for (size_t i = 0; i < lines.size() && i < kLinesShown; ++i)
    std::printf("  | %s\n", shortened(lines[i], kLineBytes).c_str());
  if (lines.size() > kLinesShown)
    std::printf("  | (%zu more lines)\n", lines.size() - kLinesShown);
}

/// The vocabulary's summary, what a chat template sees and stops at, and
/// the template.
void printTokenizer(const runtime::TokenizerSpec &s) {
  std::printf("tokenizer: %s, %zu tokens, bos %d, eos %d, eot %d\n",
              s.model == runtime::TokenizerSpec::Model::ScoreMerge
                  ? "sentencepiece (score merge)"
                  : ("byte-level BPE, pre-tokenizer " + s.preTokenizer).c_str(),
              s.tokens.size(), s.bosId, s.eosId, s.eotId);
  std::printf("  bos_token        %s\n",
              quoted(runtime::chatBosToken(s)).c_str());
  std::printf("  eos_token        %s\n",
              quoted(runtime::chatEosToken(s)).c_str());
  std::string stops;
  for (int32_t id : runtime::endOfTurnTokens(s))
    stops += (stops.empty() ? "" : ", ") + quoted(s.tokens[id]) + " (" +
             std::to_string(id) + ")";
  std::printf("  end of turn      %s\n",
              stops.empty() ? "(none)" : stops.c_str());
  printChatTemplate(s.chatTemplate);
}

/// A model file or directory, as the importer reads it.
void inspectModel(const std::string &modelPath) {
  ImportedModel model = readModel(modelPath);
  const formats::ModelConfig &c = model.config;
  std::printf("model: %s\n", modelPath.c_str());
  std::printf("  architecture     %s\n", c.architecture.c_str());
  std::printf("  dim              %lld\n", (long long)c.dim);
  std::printf("  hidden_dim       %lld\n", (long long)c.hiddenDim);
  std::printf("  layers           %lld\n", (long long)c.numLayers);
  std::printf("  heads            %lld (kv heads %lld, head size %lld)\n",
              (long long)c.numHeads, (long long)c.numKvHeads,
              (long long)c.headDim);
  std::printf("  vocab            %lld\n", (long long)c.vocabSize);
  std::printf("  context length   %lld\n", (long long)c.contextLength);
  std::printf("  rope             %s pairs, theta %g\n",
              c.ropePairs == formats::RopePairs::Adjacent ? "adjacent"
                                                          : "halves",
              c.ropeTheta);
  std::printf("  norm epsilon     %g\n", c.normEpsilon);
  std::printf("  classifier       %s\n",
              c.tiedClassifier ? "tied to token_embd.weight" : "output.weight");
  if (c.qkvBias)
    std::printf("  qkv bias         yes\n");
  if (c.slidingWindow)
    std::printf("  sliding window   %lld\n", (long long)c.slidingWindow);

  std::printf("metadata:\n");
  for (const auto &[key, value] : model.metadata)
    std::printf("  %-40s %s\n", key.c_str(), value.c_str());

  uint64_t total = 0;
  std::printf("tensors: %zu\n", model.tensors.size());
  for (const formats::TensorInfo &t : model.tensors) {
    std::string shape;
    for (int64_t d : t.shape)
      shape += (shape.empty() ? "" : "x") + std::to_string(d);
    std::printf("  %-32s %-5s %-14s %12llu bytes\n", t.name.c_str(),
                formats::elementTypeName(t.type), shape.c_str(),
                (unsigned long long)t.bytes);
    total += t.bytes;
  }
  std::printf("  total %llu bytes\n", (unsigned long long)total);

  if (model.tokenizer)
    printTokenizer(*model.tokenizer);
  else
    std::printf("tokenizer: none in the file\n");
}

/// An artifact: its manifest's summary and sections, without loading its
/// code.
void inspectArtifact(const std::string &path) {
  runtime::Artifact artifact = runtime::Artifact::open(path);
  runtime::ArtifactManifest m = runtime::parseManifest(
      path, artifact.section(runtime::section::kManifest));
  std::printf("artifact: %s\n", path.c_str());
  std::printf("  format version   %u\n", artifact.formatVersion());
  std::printf("  kiln version     %s\n", m.kilnVersion.c_str());
  std::printf("  layers           %lld\n", (long long)m.layers);
  std::printf("  heads            %lld (kv heads %lld, head size %lld)\n",
              (long long)m.heads, (long long)m.kvHeads, (long long)m.headDim);
  std::printf("  vocab            %lld\n", (long long)m.vocabSize);
  std::printf("  context length   %lld\n", (long long)m.contextLength);
  std::printf("  weights          %s\n", m.weightType.c_str());
  std::printf("  kv cache         %s\n", m.cacheElementType.c_str());
  std::string libraries;
  for (const runtime::StepLibraryManifest &library : m.libraries)
    libraries += (libraries.empty() ? "" : ", ") + library.name;
  std::printf("  step libraries   %s\n", libraries.c_str());
  std::printf("sections: %zu\n", artifact.sections().size());
  for (const runtime::SectionInfo &section : artifact.sections())
    std::printf("  %-32s %12llu bytes\n", section.name.c_str(),
                (unsigned long long)section.size);
  runtime::TokenizerSpec tokenizer;
  try {
    tokenizer = runtime::tokenizerSpecFromJson(
        artifact.section(runtime::section::kTokenizer));
  } catch (const std::invalid_argument &e) {
    throw std::runtime_error(path + ": section 'tokenizer': " + e.what());
  }
  printTokenizer(tokenizer);
}

} // namespace

int runInspect(const std::string &path) {
  if (runtime::hasArtifactMagic(path))
    inspectArtifact(path);
  else
    inspectModel(path);
  return 0;
}

} // namespace kiln
