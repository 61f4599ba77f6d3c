//===- Safetensors.cpp - Reading safetensors files ------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/Safetensors.h"

#include "frontends/formats/FormatError.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace kiln::formats {

using nlohmann::json;

namespace {

ElementType parseDtype(const std::string &file, const std::string &tensor,
                       const std::string &dtype) {
  if (dtype == "F32")
    return ElementType::F32;
  if (dtype == "F16")
    return ElementType::F16;
  if (dtype == "BF16")
    return ElementType::BF16;
  throw FormatError(file, "tensor '" + tensor + "' has dtype " + dtype +
                              "; Kiln reads F32, F16 and BF16");
}

json parseJson(const std::string &file, const char *begin, const char *end) {
  try {
    return json::parse(begin, end);
  } catch (const json::exception &e) {
    throw FormatError(file, std::string("invalid JSON: ") + e.what());
  }
}

/// The file beside `dir` named `name`, as a string.
std::string join(const std::filesystem::path &dir, const std::string &name) {
  return (dir / name).string();
}

} // namespace

std::vector<TensorInfo> readSafetensors(const MappedFile &file) {
  const std::string &path = file.path();
  if (file.size() < 8)
    throw FormatError(path, "truncated: a safetensors file starts with an "
                            "8-byte header length");
  uint64_t headerBytes;
  std::memcpy(&headerBytes, file.data(), 8);
  if (headerBytes > file.size() - 8)
    throw FormatError(path, "header length " + std::to_string(headerBytes) +
                                " runs past the end of the file (" +
                                std::to_string(file.size()) + " bytes)");
  const char *text = reinterpret_cast<const char *>(file.data() + 8);
  json header = parseJson(path, text, text + headerBytes);
  if (!header.is_object())
    throw FormatError(path, "the header is not a JSON object");

  const uint64_t dataStart = 8 + headerBytes;
  const uint64_t dataBytes = file.size() - dataStart;
  std::vector<TensorInfo> tensors;
  for (const auto &item : header.items()) {
    const std::string &name = item.key();
    const json &entry = item.value();
    if (name == "__metadata__")
      continue;
    auto fail = [&](const std::string &what) -> FormatError {
      return FormatError(path, "tensor '" + name + "': " + what);
    };
    if (!entry.is_object() || !entry.contains("dtype") ||
        !entry.contains("shape") || !entry.contains("data_offsets") ||
        !entry["dtype"].is_string() || !entry["shape"].is_array() ||
        !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      throw fail("expected {\"dtype\": string, \"shape\": [...], "
                 "\"data_offsets\": [begin, end]}");
    TensorInfo t;
    t.name = name;
    t.type = parseDtype(path, name, entry["dtype"].get<std::string>());
    uint64_t elements = 1;
    for (const json &d : entry["shape"]) {
      if (!d.is_number_unsigned())
        throw fail("shape entries must be non-negative integers");
      uint64_t dim = d.get<uint64_t>();
      if (dim > (uint64_t(1) << 40) ||
          (dim && elements > (uint64_t(1) << 62) / dim))
        throw fail("shape is implausibly large");
      elements *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    const json &offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      throw fail("data_offsets must be non-negative integers");
    uint64_t begin = offsets[0].get<uint64_t>(),
             end = offsets[1].get<uint64_t>();
    if (begin > end || end > dataBytes)
      throw fail("data [" + std::to_string(begin) + ", " + std::to_string(end) +
                 ") is outside the " + std::to_string(dataBytes) +
                 " bytes of data");
    uint64_t expected = elements * static_cast<uint64_t>(blockBytes(t.type));
    if (end - begin != expected)
      throw fail("holds " + std::to_string(end - begin) +
                 " bytes, its dtype "
                 "and shape need " +
                 std::to_string(expected));
    t.offset = dataStart + begin;
    t.bytes = end - begin;
    tensors.push_back(std::move(t));
  }
  return tensors;
}

SafetensorsModel openSafetensorsModel(const std::string &path) {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
  std::string index, single;
  if (fs::is_directory(path)) {
    index = join(dir, "model.safetensors.index.json");
    single = join(dir, "model.safetensors");
  } else if (fs::path(path).filename() == "model.safetensors.index.json") {
    index = path;
  } else {
    single = path;
  }
  SafetensorsModel model;

  if (!index.empty() && fs::exists(index)) {
    auto indexFile = MappedFile::open(index);
    const char *text = reinterpret_cast<const char *>(indexFile->data());
    json j = parseJson(index, text, text + indexFile->size());
    if (!j.is_object() || !j.contains("weight_map") ||
        !j["weight_map"].is_object())
      throw FormatError(index, "expected an object with a \"weight_map\"");
    // Open each shard once; keep only the tensors the index assigns to it.
    std::map<std::string, uint32_t> shardOf;
    std::map<std::string, std::string> wanted;
    for (const auto &[tensor, shard] : j["weight_map"].items()) {
      if (!shard.is_string())
        throw FormatError(index,
                          "weight_map[\"" + tensor + "\"] must be a file name");
      std::string name = shard.get<std::string>();
      if (name.find('/') != std::string::npos || name == ".." || name.empty())
        throw FormatError(index, "weight_map[\"" + tensor + "\"] names '" +
                                     name + "', not a file beside the index");
      wanted[tensor] = name;
      if (!shardOf.count(name)) {
        shardOf[name] = static_cast<uint32_t>(model.files.size());
        model.files.push_back(MappedFile::open(join(dir, name)));
      }
    }
    std::set<std::string> found;
    for (const auto &[name, shardIndex] : shardOf)
      for (TensorInfo &t : readSafetensors(*model.files[shardIndex])) {
        auto it = wanted.find(t.name);
        if (it == wanted.end() || it->second != name)
          continue;
        t.shard = shardIndex;
        found.insert(t.name);
        model.tensors.push_back(std::move(t));
      }
    for (const auto &[tensor, shard] : wanted)
      if (!found.count(tensor))
        throw FormatError(join(dir, shard), "tensor '" + tensor +
                                                "' listed by the index is "
                                                "missing");
    return model;
  }
  if (!single.empty() && fs::exists(single)) {
    model.files.push_back(MappedFile::open(single));
    model.tensors = readSafetensors(*model.files[0]);
    return model;
  }
  throw FormatError(path, "no model.safetensors or "
                          "model.safetensors.index.json found");
}

} // namespace kiln::formats
