//===- CubinResources.cpp - What each kernel of a cubin uses --------------===//
//
// Part of Kiln's CUDA code generation. See CubinResources.h.
//
// The .nv.info layout (NVIDIA does not document it; it is stable across
// the toolkits Kiln has read): a sequence of attributes, each a byte of
// format, a byte of attribute id and 16 bits that are, for format 4
// (EIFMT_SVAL), the size of the payload that follows, and otherwise the
// value itself. REGCOUNT (0x2f) and FRAME_SIZE (0x11) are SVALs of two
// 32-bit words: the kernel's symbol index, then the value.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/CubinResources.h"

#include <elf.h>

#include <cstring>
#include <regex>

namespace kiln::codegen::cuda {
namespace {

constexpr uint8_t kFormatSval = 4;
constexpr uint8_t kAttrFrameSize = 0x11;
constexpr uint8_t kAttrRegCount = 0x2f;

template <class T> T readAt(const std::vector<char> &bytes, size_t offset) {
  if (offset + sizeof(T) > bytes.size())
    throw CubinError("cubin truncated: " + std::to_string(sizeof(T)) +
                     " bytes wanted at offset " + std::to_string(offset) +
                     " of " + std::to_string(bytes.size()));
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

} // namespace

std::map<std::string, KernelResources>
readCubinResources(const std::vector<char> &cubin) {
  auto header = readAt<Elf64_Ehdr>(cubin, 0);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64)
    throw CubinError("not a cubin: no 64-bit ELF header");
  std::vector<Elf64_Shdr> sections;
  for (unsigned i = 0; i < header.e_shnum; ++i)
    sections.push_back(readAt<Elf64_Shdr>(
        cubin, header.e_shoff + size_t(i) * header.e_shentsize));
  if (header.e_shstrndx >= sections.size())
    throw CubinError("cubin: no section name table");
  auto string = [&](const Elf64_Shdr &table, size_t offset) {
    std::string s;
    for (size_t at = table.sh_offset + offset;; ++at) {
      char c = readAt<char>(cubin, at);
      if (c == '\0')
        return s;
      s += c;
    }
  };
  const Elf64_Shdr &names = sections[header.e_shstrndx];

  // Symbol index -> name, for the entry functions.
  std::vector<std::string> symbols;
  const Elf64_Shdr *info = nullptr;
  for (const Elf64_Shdr &s : sections) {
    std::string name = string(names, s.sh_name);
    if (name == ".nv.info")
      info = &s;
    if (s.sh_type != SHT_SYMTAB)
      continue;
    if (s.sh_link >= sections.size())
      throw CubinError("cubin: symbol table without its string table");
    for (size_t at = 0; at + sizeof(Elf64_Sym) <= s.sh_size;
         at += sizeof(Elf64_Sym)) {
      auto sym = readAt<Elf64_Sym>(cubin, s.sh_offset + at);
      symbols.push_back(string(sections[s.sh_link], sym.st_name));
    }
  }
  if (!info)
    throw CubinError("cubin has no .nv.info section");

  std::map<std::string, KernelResources> kernels;
  for (size_t at = info->sh_offset;
       at + 4 <= info->sh_offset + info->sh_size;) {
    uint8_t format = readAt<uint8_t>(cubin, at);
    uint8_t attr = readAt<uint8_t>(cubin, at + 1);
    uint16_t size = readAt<uint16_t>(cubin, at + 2);
    at += 4;
    if (format != kFormatSval)
      continue;
    if ((attr == kAttrRegCount || attr == kAttrFrameSize) && size == 8) {
      uint32_t symbol = readAt<uint32_t>(cubin, at);
      uint32_t value = readAt<uint32_t>(cubin, at + 4);
      if (symbol >= symbols.size())
        throw CubinError("cubin .nv.info names symbol " +
                         std::to_string(symbol) + " of " +
                         std::to_string(symbols.size()));
      KernelResources &k = kernels[symbols[symbol]];
      (attr == kAttrRegCount ? k.registers : k.frameBytes) = int(value);
    }
    at += size;
  }
  return kernels;
}

void addPtxasSpills(std::map<std::string, KernelResources> &resources,
                    const std::string &log) {
  static const std::regex properties(
      R"(Function properties for (\S+)\s*\n[^\n]*?(\d+) bytes spill stores, (\d+) bytes spill loads)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), properties);
       it != std::sregex_iterator(); ++it) {
    KernelResources &k = resources[(*it)[1].str()];
    k.spillStoreBytes = std::stoi((*it)[2].str());
    k.spillLoadBytes = std::stoi((*it)[3].str());
  }
}

} // namespace kiln::codegen::cuda
