//===- GGUFTest.cpp - The GGUF reader -------------------------------------===//
//
// Part of Kiln's unit tests. Files built with Kiln's GGUFWriter (and
// corrupted with GGUFTestBytes.h) check that every
// metadata type and tensor info reads back, that each kind of malformed file
// is rejected with its own message, and that truncated and mutated files
// never do worse than throw FormatError. The shared fixtures check the
// reader on files written by llama.cpp, and that its Q8_0/Q4_0/BF16 blocks
// dequantize to their F32 source within each format's rounding bound.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/GGUF.h"

#include "GGUFTestBytes.h"
#include "TestData.h"
#include "frontends/formats/FormatError.h"
#include "frontends/formats/GGUFWriter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <unistd.h>

using namespace kiln::formats;
using kiln::test::bf16Bytes;
using kiln::test::f16Bytes;
using kiln::test::f32Bytes;
using kiln::test::le;
using kiln::test::patch;
using kiln::test::q4_0Bytes;
using kiln::test::q8_0Bytes;
using kiln::test::withTensorOffset;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A fresh path in the test temp directory (unique per process and call).
std::string tempPath() {
  static std::atomic<int> counter{0};
  return ::testing::TempDir() + "kiln-gguf-test-" + std::to_string(getpid()) +
         "-" + std::to_string(counter++) + ".gguf";
}

/// Writes `bytes` to a temp file, maps it (the mapping outlives the file)
/// and parses it.
GGUFFile parse(const std::string &bytes) {
  std::string path = tempPath();
  kiln::test::writeFile(path, bytes);
  std::shared_ptr<const MappedFile> mapped;
  try {
    mapped = MappedFile::open(path);
  } catch (...) {
    std::remove(path.c_str());
    throw;
  }
  std::remove(path.c_str());
  return GGUFFile::read(mapped);
}

/// The FormatError message parsing `bytes` gives, or "" if it parses.
/// Any other exception fails the test.
std::string errorOf(const std::string &bytes) {
  try {
    parse(bytes);
  } catch (const FormatError &e) {
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "non-FormatError exception: " << e.what();
    return "";
  }
  return "";
}

#define EXPECT_ERROR(bytes, substring)                                         \
  do {                                                                         \
    std::string message_ = errorOf(bytes);                                     \
    EXPECT_NE(message_.find(substring), std::string::npos)                     \
        << "expected an error containing \"" << (substring) << "\", got \""    \
        << message_ << "\"";                                                   \
  } while (false)

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * (float(i) - float(n) / 2);
  return v;
}

std::string asString(const uint8_t *p, uint64_t n) {
  return std::string(reinterpret_cast<const char *>(p), size_t(n));
}

/// A valid file with every metadata value type and a tensor of each
/// element type. Tests corrupt it in one place at a time.
GGUFWriter validWriter() {
  GGUFWriter w;
  std::vector<std::string> vocab;
  for (int i = 0; i < 40; ++i)
    vocab.push_back("tok" + std::to_string(i));
  w.addString("general.architecture", "llama")
      .addU8("test.u8", 200)
      .addI8("test.i8", -100)
      .addU16("test.u16", 60000)
      .addI16("test.i16", -30000)
      .addU32("llama.rope.freq_base_int", 10000)
      .addI32("test.i32", -2000000000)
      .addU64("test.u64", 1ull << 40)
      .addI64("test.i64", -(1ll << 50))
      .addF32("llama.attention.layer_norm_rms_epsilon", 1e-5f)
      .addF64("test.f64", 0.1)
      .addBool("test.bool", true)
      .addStringArray("tokenizer.ggml.tokens", vocab)
      .addF32Array("tokenizer.ggml.scores", {0.5f, -1.25f, 3.0f})
      .addI32Array("tokenizer.ggml.token_type", {1, -2, 3})
      .addU32Array("test.u32_array", {7, 8})
      .addString("test.quoted", "say \"hi\"\n");
  w.addTensor("token_embd.weight", {3, 4}, ElementType::F32,
              f32Bytes(ramp(12, 0.5f)));
  w.addTensor("blk.0.attn_norm.weight", {5}, ElementType::F16,
              f16Bytes({1, 2, 3, 4, 5}));
  w.addTensor("blk.0.ffn_up.weight", {2, 3}, ElementType::BF16,
              bf16Bytes({1, -1, 2, -2, 0.5f, 4}));
  w.addTensor("blk.0.attn_q.weight", {2, 64}, ElementType::Q8_0,
              q8_0Bytes(ramp(128, 0.01f)));
  w.addTensor("output.weight", {3, 32}, ElementType::Q4_0,
              q4_0Bytes(ramp(96, 0.1f)));
  return w;
}

//===----------------------------------------------------------------------===//
// Valid files
//===----------------------------------------------------------------------===//

TEST(GGUF, ValidFileRoundTripsMetadata) {
  GGUFFile f = parse(validWriter().bytes());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  ASSERT_EQ(f.keys().size(), 17u);
  EXPECT_EQ(f.keys()[0], "general.architecture");
  EXPECT_EQ(f.keys()[16], "test.quoted");

  EXPECT_EQ(f.getString("general.architecture"), "llama");
  EXPECT_EQ(f.getInt("test.u8"), 200);
  EXPECT_EQ(f.getInt("test.i8"), -100);
  EXPECT_EQ(f.getInt("test.u16"), 60000);
  EXPECT_EQ(f.getInt("test.i16"), -30000);
  EXPECT_EQ(f.getInt("llama.rope.freq_base_int"), 10000);
  EXPECT_EQ(f.getInt("test.i32"), -2000000000);
  EXPECT_EQ(f.getInt("test.u64"), int64_t(1) << 40);
  EXPECT_EQ(f.getInt("test.i64"), -(int64_t(1) << 50));
  EXPECT_EQ(f.getFloat("llama.attention.layer_norm_rms_epsilon"),
            double(1e-5f));
  EXPECT_EQ(f.getFloat("test.f64"), 0.1);
  EXPECT_EQ(f.getFloat("test.i16"), -30000.0); // Integers widen to floats.
  EXPECT_EQ(f.getBool("test.bool"), true);
  EXPECT_EQ(f.getString("test.quoted"), "say \"hi\"\n");

  auto tokens = f.getStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->size(), 40u);
  EXPECT_EQ((*tokens)[0], "tok0");
  EXPECT_EQ((*tokens)[39], "tok39");
  EXPECT_EQ(f.getFloatArray("tokenizer.ggml.scores"),
            (std::vector<float>{0.5f, -1.25f, 3.0f}));
  EXPECT_EQ(f.getIntArray("tokenizer.ggml.token_type"),
            (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f.getIntArray("test.u32_array"), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(f.getFloatArray("test.u32_array"), (std::vector<float>{7, 8}));

  // The raw values remember their file types.
  const GGUFValue *u16 = f.find("test.u16");
  ASSERT_TRUE(u16);
  EXPECT_EQ(u16->type, GGUFType::U16);
  const GGUFValue *scores = f.find("tokenizer.ggml.scores");
  ASSERT_TRUE(scores);
  EXPECT_EQ(scores->type, GGUFType::Array);
  EXPECT_EQ(scores->arrayType, GGUFType::F32);
  EXPECT_EQ(scores->array.size(), 3u);

  // Absent keys are nothing, not errors.
  EXPECT_EQ(f.find("nope"), nullptr);
  EXPECT_EQ(f.getInt("nope"), std::nullopt);
  EXPECT_EQ(f.getStringArray("nope"), std::nullopt);
}

TEST(GGUF, Describe) {
  GGUFFile f = parse(validWriter().bytes());
  EXPECT_EQ(f.describe("general.architecture"), "\"llama\"");
  EXPECT_EQ(f.describe("llama.rope.freq_base_int"), "10000");
  EXPECT_EQ(f.describe("test.i8"), "-100");
  EXPECT_EQ(f.describe("llama.attention.layer_norm_rms_epsilon"), "1e-05");
  EXPECT_EQ(f.describe("test.f64"), "0.1");
  EXPECT_EQ(f.describe("test.bool"), "true");
  EXPECT_EQ(f.describe("tokenizer.ggml.tokens"), "[string x 40]");
  EXPECT_EQ(f.describe("tokenizer.ggml.scores"), "[0.5, -1.25, 3]");
  EXPECT_EQ(f.describe("tokenizer.ggml.token_type"), "[1, -2, 3]");
  EXPECT_EQ(f.describe("test.quoted"), "\"say \\\"hi\\\"\\n\"");
  EXPECT_EQ(f.describe("nope"), "(absent)");
}

TEST(GGUF, ValidFileRoundTripsTensors) {
  GGUFWriter w = validWriter();
  std::string bytes = w.bytes();
  GGUFWriter::Layout layout = w.layout();
  GGUFFile f = parse(bytes);

  ASSERT_EQ(f.tensors().size(), 5u);
  const std::vector<std::string> names = {
      "token_embd.weight", "blk.0.attn_norm.weight", "blk.0.ffn_up.weight",
      "blk.0.attn_q.weight", "output.weight"};
  const std::vector<std::vector<int64_t>> shapes = {
      {3, 4}, {5}, {2, 3}, {2, 64}, {3, 32}};
  const std::vector<ElementType> types = {ElementType::F32, ElementType::F16,
                                          ElementType::BF16, ElementType::Q8_0,
                                          ElementType::Q4_0};
  const std::vector<uint64_t> sizes = {48, 10, 12, 4 * 34, 3 * 18};
  for (size_t i = 0; i < names.size(); ++i) {
    const TensorInfo &t = f.tensors()[i];
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(t.name, names[i]);
    EXPECT_EQ(t.shape, shapes[i]); // Outermost first: GGUF's dims reversed.
    EXPECT_EQ(t.type, types[i]);
    EXPECT_EQ(t.bytes, sizes[i]);
    EXPECT_EQ(t.offset, layout.tensorDataOffsets[i]); // Absolute.
    EXPECT_EQ(t.offset % 32, 0u);
    EXPECT_EQ(f.findTensor(names[i]), &t);
    EXPECT_EQ(f.data(t), f.mapping()->data() + t.offset);
  }
  EXPECT_EQ(f.findTensor("missing"), nullptr);
  EXPECT_EQ(f.tensors()[0].numElements(), 12);

  // The data pointer really points at each tensor's bytes.
  const TensorInfo &embd = *f.findTensor("token_embd.weight");
  std::vector<float> values(12);
  dequantize(embd.type, f.data(embd), values.data(), 12);
  EXPECT_EQ(values, ramp(12, 0.5f));
  const TensorInfo &norm = *f.findTensor("blk.0.attn_norm.weight");
  dequantize(norm.type, f.data(norm), values.data(), 5);
  EXPECT_EQ(std::vector<float>(values.begin(), values.begin() + 5),
            (std::vector<float>{1, 2, 3, 4, 5}));
  const TensorInfo &q8 = *f.findTensor("blk.0.attn_q.weight");
  EXPECT_EQ(asString(f.data(q8), q8.bytes), q8_0Bytes(ramp(128, 0.01f)));
  const TensorInfo &q4 = *f.findTensor("output.weight");
  EXPECT_EQ(asString(f.data(q4), q4.bytes), q4_0Bytes(ramp(96, 0.1f)));
}

TEST(GGUF, KQuantTensors) {
  // ggml types 12, 13, 14: rows of 256-weight blocks, sized as GGUF says.
  GGUFWriter w;
  w.addTensor("blk.0.attn_q.weight", {2, 256}, ElementType::Q4_K,
              std::string(2 * 144, '\1'));
  w.addTensor("blk.0.attn_v.weight", {1, 512}, ElementType::Q5_K,
              std::string(2 * 176, '\2'));
  w.addTensor("output.weight", {3, 256}, ElementType::Q6_K,
              std::string(3 * 210, '\3'));
  GGUFWriter::Layout layout = w.layout();
  GGUFFile f = parse(w.bytes());
  ASSERT_EQ(f.tensors().size(), 3u);
  const ElementType types[] = {ElementType::Q4_K, ElementType::Q5_K,
                               ElementType::Q6_K};
  const uint64_t sizes[] = {288, 352, 630};
  for (size_t i = 0; i < 3; ++i) {
    const TensorInfo &t = f.tensors()[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.type, types[i]);
    EXPECT_EQ(t.bytes, sizes[i]);
    EXPECT_EQ(t.offset, layout.tensorDataOffsets[i]);
    EXPECT_EQ(*f.data(t), static_cast<uint8_t>(i + 1));
  }
}

TEST(GGUF, VersionTwoAndCustomAlignment) {
  GGUFWriter w(/*version=*/2);
  w.setAlignment(64);
  w.addTensor("a", {3}, ElementType::F32, f32Bytes({1, 2, 3}));
  w.addTensor("b", {1}, ElementType::F32, f32Bytes({4}));
  GGUFFile f = parse(w.bytes());
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.alignment(), 64u);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[0].offset % 64, 0u);
  EXPECT_EQ(f.tensors()[1].offset, f.tensors()[0].offset + 64);
  float b;
  dequantize(ElementType::F32, f.data(f.tensors()[1]), &b, 1);
  EXPECT_EQ(b, 4.0f);
}

TEST(GGUF, EmptyFileWithOnlyHeader) {
  GGUFFile f = parse(GGUFWriter().bytes());
  EXPECT_TRUE(f.keys().empty());
  EXPECT_TRUE(f.tensors().empty());
}

//===----------------------------------------------------------------------===//
// Malformed files
//===----------------------------------------------------------------------===//

TEST(GGUFErrors, MessagesNameTheFile) {
  std::string bytes = validWriter().bytes();
  bytes[0] = 'X';
  std::string path = tempPath();
  kiln::test::writeFile(path, bytes);
  try {
    GGUFFile::open(path);
    ADD_FAILURE() << "bad magic accepted";
  } catch (const FormatError &e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW(GGUFFile::open(path), FormatError); // Now missing.
}

TEST(GGUFErrors, Truncated) {
  GGUFWriter w = validWriter();
  std::string bytes = w.bytes();
  GGUFWriter::Layout l = w.layout();

  EXPECT_ERROR("", "unexpected end of file: magic at offset 0 needs 4 bytes");
  EXPECT_ERROR(bytes.substr(0, 10),
               "unexpected end of file: tensor count at offset 8");
  EXPECT_ERROR(bytes.substr(0, 20), "metadata count at offset 16");

  // Inside the last metadata string value ("say \"hi\"\n", 9 bytes): its
  // key is "test.quoted", so the value's length is at kv + 8 + 11 + 4.
  size_t lastValue = l.kvOffsets.back() + 8 + 11 + 4;
  EXPECT_ERROR(bytes.substr(0, lastValue + 8 + 5),
               "key 'test.quoted': string value: string length 9");
  // Inside a key.
  EXPECT_ERROR(bytes.substr(0, l.kvOffsets.back() + 8 + 3),
               "metadata entry 16: key: string length 11");

  // Inside the tensor infos: the third tensor's dimensions.
  size_t info = l.tensorInfoOffsets[2] + 8 + std::strlen("blk.0.ffn_up.weight");
  EXPECT_ERROR(bytes.substr(0, info + 4 + 3),
               "tensor 'blk.0.ffn_up.weight': unexpected end of file: "
               "dimension at offset");
  EXPECT_ERROR(bytes.substr(0, info - 6), "tensor info 2: tensor name");

  // Inside the data of the last tensor.
  size_t cut = l.tensorDataOffsets[4] + 7;
  std::string message = errorOf(bytes.substr(0, cut));
  std::string expected = ": tensor 'output.weight': data [offset " +
                         std::to_string(l.tensorDataOffsets[4]) +
                         ", 54 bytes] runs past the end of the file (" +
                         std::to_string(cut) + " bytes)";
  ASSERT_GE(message.size(), expected.size());
  EXPECT_EQ(message.substr(message.size() - expected.size()), expected);
}

TEST(GGUFErrors, BadMagicAndVersion) {
  std::string bytes = validWriter().bytes();
  std::string badMagic = bytes;
  badMagic[3] = 'G';
  EXPECT_ERROR(badMagic, "not a GGUF file: magic bytes are 47 47 55 47");

  for (uint32_t version : {0u, 1u, 4u, 1000u}) {
    std::string v = bytes;
    patch(v, GGUFWriter::kVersionOffset, version);
    EXPECT_ERROR(v, "unsupported GGUF version " + std::to_string(version) +
                        " (Kiln reads versions 2 and 3)");
  }
  std::string bigEndian = bytes;
  patch(bigEndian, GGUFWriter::kVersionOffset, 0x03000000u);
  EXPECT_ERROR(bigEndian, "big-endian");
}

TEST(GGUFErrors, ImplausibleCounts) {
  std::string bytes = validWriter().bytes();
  std::string kv = bytes;
  patch(kv, GGUFWriter::kKVCountOffset, uint64_t(1) << 62);
  EXPECT_ERROR(kv, "metadata count 4611686018427387904 cannot fit");
  patch(kv, GGUFWriter::kKVCountOffset, ~uint64_t(0));
  EXPECT_ERROR(kv, "metadata count 18446744073709551615 cannot fit");

  std::string tensors = bytes;
  patch(tensors, GGUFWriter::kTensorCountOffset, uint64_t(1) << 40);
  EXPECT_ERROR(tensors, "tensor count 1099511627776 cannot fit");

  // An array count that cannot fit in what remains (each string needs at
  // least its 8-byte length).
  GGUFWriter w;
  w.addArray("tokenizer.ggml.tokens", uint32_t(GGUFType::String), 1000000,
             GGUFWriter::str("a"));
  EXPECT_ERROR(w.bytes(), "key 'tokenizer.ggml.tokens': array of 1000000 "
                          "string at offset 57 cannot fit");
}

TEST(GGUFErrors, StringLengthPastTheEnd) {
  GGUFWriter w = validWriter();
  std::string bytes = w.bytes();
  patch(bytes, w.layout().kvOffsets[0], uint64_t(1000000000));
  EXPECT_ERROR(bytes, "metadata entry 0: key: string length 1000000000 at "
                      "offset 24 runs past the end of the file");
  patch(bytes, w.layout().kvOffsets[0], ~uint64_t(0));
  EXPECT_ERROR(bytes, "string length 18446744073709551615");
}

TEST(GGUFErrors, BadMetadataValues) {
  EXPECT_ERROR(GGUFWriter().addEncoded("k", 13, "").bytes(),
               "key 'k': unknown value type 13");
  EXPECT_ERROR(GGUFWriter().addArray("k", 99, 0, "").bytes(),
               "key 'k': unknown array element type 99");
  EXPECT_ERROR(GGUFWriter()
                   .addArray("k", uint32_t(GGUFType::Array), 1,
                             le(uint32_t(4)) + le(uint64_t(0)))
                   .bytes(),
               "key 'k': nested arrays are not supported");
  EXPECT_ERROR(
      GGUFWriter().addEncoded("k", uint32_t(GGUFType::Bool), "\x02").bytes(),
      "key 'k': bool value 2 at offset 37 is neither 0 nor 1");
  EXPECT_ERROR(GGUFWriter().addU32("a", 1).addU32("a", 2).bytes(),
               "key 'a': duplicate key");
}

TEST(GGUFErrors, BadAlignment) {
  // The key disagrees with the layout: the writer itself refuses 48.
  EXPECT_ERROR(GGUFWriter().addU32("general.alignment", 48).bytes(),
               "key 'general.alignment': alignment 48 is not a power of two");
  EXPECT_ERROR(GGUFWriter().addU32("general.alignment", 0).bytes(),
               "alignment 0 is not a power of two");
  EXPECT_ERROR(GGUFWriter().addString("general.alignment", "32").bytes(),
               "key 'general.alignment': expected u32, found string");
}

GGUFWriter::RawTensor rawF32(const std::string &name, uint64_t n) {
  GGUFWriter::RawTensor t;
  t.name = name;
  t.dims = {n};
  t.ggmlType = 0;
  t.data = f32Bytes(std::vector<float>(n, 1.0f));
  return t;
}

TEST(GGUFErrors, TensorOffsets) {
  std::string bytes = withTensorOffset(
      GGUFWriter().addRawTensor(rawF32("blk.0.attn_q.weight", 4)), 0, 1024);
  EXPECT_ERROR(bytes, "tensor 'blk.0.attn_q.weight': data [offset " +
                          std::to_string(1024 + 96) +
                          ", 16 bytes] runs past the end of the file (" +
                          std::to_string(bytes.size()) + " bytes)");

  // An offset so large that data start + offset overflows.
  EXPECT_ERROR(withTensorOffset(GGUFWriter().addRawTensor(rawF32("w", 4)), 0,
                                ~uint64_t(31)),
               "tensor 'w': data [offset data section + "
               "18446744073709551584, 16 bytes] runs past the end");

  EXPECT_ERROR(
      withTensorOffset(GGUFWriter().addRawTensor(rawF32("w", 4)), 0, 16),
      "tensor 'w': data offset 16 is not a multiple of the "
      "alignment 32");

  // Sizes past the end: a tensor claiming more elements than it stores.
  GGUFWriter::RawTensor big = rawF32("w", 4);
  big.dims = {4, 1000};
  EXPECT_ERROR(GGUFWriter().addRawTensor(big).bytes(),
               "tensor 'w': data [offset 96, 16000 bytes] runs past the end");
}

TEST(GGUFErrors, TensorTypesAndShapes) {
  GGUFWriter::RawTensor q2k = rawF32("blk.0.ffn_down.weight", 256);
  q2k.ggmlType = 10;
  EXPECT_ERROR(GGUFWriter().addRawTensor(q2k).bytes(),
               "tensor 'blk.0.ffn_down.weight': unsupported tensor type q2_k "
               "(ggml type 10)");
  q2k.ggmlType = 20;
  EXPECT_ERROR(GGUFWriter().addRawTensor(q2k).bytes(),
               "unsupported tensor type iq4_nl (ggml type 20)");
  q2k.ggmlType = 1234;
  EXPECT_ERROR(GGUFWriter().addRawTensor(q2k).bytes(),
               "unsupported tensor type ggml type 1234");

  GGUFWriter::RawTensor dims = rawF32("w", 1);
  dims.dims = {};
  EXPECT_ERROR(GGUFWriter().addRawTensor(dims).bytes(),
               "tensor 'w': dimension count 0 is outside 1..4");
  dims.dims = {1, 1, 1, 1, 1};
  EXPECT_ERROR(GGUFWriter().addRawTensor(dims).bytes(),
               "tensor 'w': dimension count 5 is outside 1..4");
  dims.dims = {1, 0};
  EXPECT_ERROR(GGUFWriter().addRawTensor(dims).bytes(),
               "tensor 'w': dimension 1 is 0");
  dims.dims = {uint64_t(1) << 32, uint64_t(1) << 32};
  EXPECT_ERROR(GGUFWriter().addRawTensor(dims).bytes(),
               "tensor 'w': element count overflows");

  EXPECT_ERROR(GGUFWriter()
                   .addTensor("blk.0.attn_k.weight", {2, 48}, ElementType::Q8_0,
                              std::string(2 * 34 * 2, '\0'))
                   .bytes(),
               "tensor 'blk.0.attn_k.weight': row length 48 is not a "
               "multiple of 32 (the q8_0 block size)");
  EXPECT_ERROR(GGUFWriter()
                   .addTensor("w", {16}, ElementType::Q4_0, std::string(18, 0))
                   .bytes(),
               "row length 16 is not a multiple of 32 (the q4_0 block size)");
  // The K-quants' blocks hold 256 weights of a row.
  for (auto [type, name] : {std::pair{ElementType::Q4_K, "q4_k"},
                            {ElementType::Q5_K, "q5_k"},
                            {ElementType::Q6_K, "q6_k"}})
    EXPECT_ERROR(GGUFWriter()
                     .addTensor("blk.0.attn_k.weight", {4, 128}, type,
                                std::string(2 * blockBytes(type), '\0'))
                     .bytes(),
                 std::string("tensor 'blk.0.attn_k.weight': row length 128 is "
                             "not a multiple of 256 (the ") +
                     name + " block size)");

  EXPECT_ERROR(GGUFWriter()
                   .addRawTensor(rawF32("a", 2))
                   .addRawTensor(rawF32("b", 2))
                   .addRawTensor(rawF32("a", 2))
                   .bytes(),
               "tensor 'a': duplicate tensor name");
}

TEST(GGUFErrors, WrongTypeGetters) {
  GGUFWriter w = validWriter();
  w.addU64("test.u64_max", ~uint64_t(0));
  GGUFFile f = parse(w.bytes());
  auto messageOf = [](auto &&get) -> std::string {
    try {
      get();
    } catch (const FormatError &e) {
      return e.what();
    }
    return "(no error)";
  };
  auto contains = [](const std::string &haystack, const std::string &needle) {
    return haystack.find(needle) != std::string::npos;
  };
  std::string m = messageOf([&] { return f.getInt("general.architecture"); });
  EXPECT_TRUE(contains(
      m, "key 'general.architecture': expected an integer, found string"))
      << m;
  m = messageOf([&] { return f.getInt("test.f64"); });
  EXPECT_TRUE(contains(m, "key 'test.f64': expected an integer, found f64"))
      << m;
  m = messageOf([&] { return f.getFloat("test.bool"); });
  EXPECT_TRUE(contains(
      m, "key 'test.bool': expected a float or an integer, found bool"))
      << m;
  m = messageOf([&] { return f.getString("test.u32_array"); });
  EXPECT_TRUE(
      contains(m, "key 'test.u32_array': expected string, found array of u32"))
      << m;
  m = messageOf([&] { return f.getBool("test.u8"); });
  EXPECT_TRUE(contains(m, "key 'test.u8': expected bool, found u8")) << m;
  m = messageOf([&] { return f.getStringArray("tokenizer.ggml.scores"); });
  EXPECT_TRUE(contains(m, "key 'tokenizer.ggml.scores': expected array of "
                          "string, found array of f32"))
      << m;
  m = messageOf([&] { return f.getIntArray("tokenizer.ggml.scores"); });
  EXPECT_TRUE(contains(m, "expected array of integer, found array of f32"))
      << m;
  m = messageOf([&] { return f.getFloatArray("tokenizer.ggml.tokens"); });
  EXPECT_TRUE(contains(m, "expected array of float or integer, found array "
                          "of string"))
      << m;
  m = messageOf([&] { return f.getInt("test.u64_max"); });
  EXPECT_TRUE(contains(m, "key 'test.u64_max': value 18446744073709551615 "
                          "(u64) does not fit in a signed 64-bit integer"))
      << m;
  EXPECT_EQ(f.getFloat("test.u64_max"), 18446744073709551615.0);
}

//===----------------------------------------------------------------------===//
// Robustness: the seed of a fuzzer
//===----------------------------------------------------------------------===//

/// Reads everything a consumer would from a parsed file, so that a reader
/// bug letting bad offsets through shows up (under ASan) here.
void touchEverything(const GGUFFile &f) {
  for (const std::string &key : f.keys()) {
    (void)f.describe(key);
    try {
      (void)f.getInt(key);
    } catch (const FormatError &) {
    }
    try {
      (void)f.getStringArray(key);
    } catch (const FormatError &) {
    }
  }
  uint64_t sum = 0;
  for (const TensorInfo &t : f.tensors()) {
    ASSERT_LE(t.offset, f.mapping()->size());
    ASSERT_LE(t.bytes, f.mapping()->size() - t.offset);
    const uint8_t *p = f.data(t);
    for (uint64_t i = 0; i < t.bytes; ++i)
      sum += p[i];
  }
  (void)sum;
}

TEST(GGUFRobustness, EveryTruncationThrowsFormatError) {
  GGUFWriter w = validWriter();
  std::string bytes = w.bytes();
  GGUFWriter::Layout l = w.layout();
  // Everything up to the end of the last tensor's data is needed; only the
  // trailing padding may go.
  size_t needed = l.tensorDataOffsets.back() + 3 * 18;
  int rejected = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    SCOPED_TRACE("truncated to " + std::to_string(n) + " bytes");
    try {
      GGUFFile f = parse(bytes.substr(0, n));
      EXPECT_GE(n, needed) << "a file missing needed bytes parsed";
      touchEverything(f);
    } catch (const FormatError &) {
      EXPECT_LT(n, needed);
      ++rejected;
    } catch (const std::exception &e) {
      FAIL() << "non-FormatError exception: " << e.what();
    }
  }
  EXPECT_EQ(rejected, int(needed));
}

TEST(GGUFRobustness, SingleByteMutationsNeverCrash) {
  GGUFWriter w = validWriter();
  std::string bytes = w.bytes();
  size_t headerAndInfos = w.layout().dataStart;
  std::mt19937 rng(20240601);
  int parsed = 0, rejected = 0;
  std::set<std::string> distinctErrors;
  for (int i = 0; i < 3000; ++i) {
    std::string mutated = bytes;
    // Mostly the header, metadata and tensor infos, where the structure is;
    // data bytes can take any value.
    size_t span = (i % 10 == 0) ? bytes.size() : headerAndInfos;
    size_t pos = rng() % span;
    uint8_t value = static_cast<uint8_t>(rng());
    if (i % 3 == 0) // Boundary values are the interesting ones.
      value = (rng() % 2) ? 0xFF : 0x00;
    mutated[pos] = static_cast<char>(value);
    SCOPED_TRACE("byte " + std::to_string(pos) + " = " + std::to_string(value));
    try {
      GGUFFile f = parse(mutated);
      touchEverything(f);
      ++parsed;
    } catch (const FormatError &e) {
      // Without the (temporary, varying) path, and without numbers' tails.
      std::string message = e.what();
      message = message.substr(message.find(": ") + 2);
      distinctErrors.insert(message.substr(0, 40));
      ++rejected;
    } catch (const std::exception &e) {
      FAIL() << "non-FormatError exception: " << e.what();
    }
  }
  std::cout << "[          ] 3000 mutations: " << parsed << " parsed, "
            << rejected << " rejected with " << distinctErrors.size()
            << " distinct messages\n";
  RecordProperty("parsed", parsed);
  RecordProperty("rejected", rejected);
  EXPECT_GT(parsed, 100);
  EXPECT_GT(rejected, 1000);
}

//===----------------------------------------------------------------------===//
// Real files (llama.cpp's writer)
//===----------------------------------------------------------------------===//

std::string model(const std::string &name) {
  return kiln::test::modelsDir() + "/" + name;
}

TEST(GGUFFixtures, Stories260K) {
  KILN_REQUIRE_TEST_FILE(model("stories260K-f32.gguf"));
  GGUFFile f = GGUFFile::open(model("stories260K-f32.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.getString("general.architecture"), "llama");
  EXPECT_EQ(f.getInt("llama.embedding_length"), 64);
  EXPECT_EQ(f.getInt("llama.block_count"), 5);
  EXPECT_EQ(f.getInt("llama.context_length"), 128);
  EXPECT_EQ(f.getInt("llama.feed_forward_length"), 172);
  EXPECT_EQ(f.getInt("llama.attention.head_count"), 8);
  EXPECT_EQ(f.getInt("llama.attention.head_count_kv"), 4);
  EXPECT_NEAR(*f.getFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5,
              1e-12);
  EXPECT_EQ(f.describe("general.architecture"), "\"llama\"");
  EXPECT_EQ(f.describe("tokenizer.ggml.tokens"), "[string x 512]");
  auto tokens = f.getStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ(f.getIntArray("tokenizer.ggml.token_type")->size(), 512u);

  EXPECT_EQ(f.tensors().size(), 2 + 1 + 5 * 9u);
  const TensorInfo *embd = f.findTensor("token_embd.weight");
  ASSERT_TRUE(embd);
  EXPECT_EQ(embd->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(embd->type, ElementType::F32);
  EXPECT_EQ(embd->bytes, 512u * 64 * 4);
  const TensorInfo *down = f.findTensor("blk.4.ffn_down.weight");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->shape, (std::vector<int64_t>{64, 172}));
  const TensorInfo *norm = f.findTensor("output_norm.weight");
  ASSERT_TRUE(norm);
  EXPECT_EQ(norm->shape, (std::vector<int64_t>{64}));

  // The embedding is the first tensor of the llama2.c checkpoint the GGUF
  // was converted from (after a 7-int32 header): same bytes, so the data
  // pointer lands on the right place.
  if (kiln::test::fileExists(model("stories260K.bin"))) {
    std::ifstream bin(model("stories260K.bin"), std::ios::binary);
    std::string checkpoint((std::istreambuf_iterator<char>(bin)),
                           std::istreambuf_iterator<char>());
    ASSERT_GE(checkpoint.size(), 28 + embd->bytes);
    EXPECT_EQ(asString(f.data(*embd), embd->bytes),
              checkpoint.substr(28, embd->bytes));
  }
}

/// Dequantizes a whole tensor.
std::vector<float> floatsOf(const GGUFFile &f, const TensorInfo &t) {
  std::vector<float> out(size_t(t.numElements()));
  dequantize(t.type, f.data(t), out.data(), t.numElements());
  return out;
}

uint16_t storedScale(const uint8_t *block) {
  return static_cast<uint16_t>(block[0] | (block[1] << 8));
}

struct Comparison {
  double worstRatio = 0; ///< max |w - w_ref| / bound over all elements.
  double worstAbs = 0;
  int64_t elements = 0;
  int tensors = 0;
};

/// Compares every tensor of `quantized` with the same tensor of the F32
/// reference file. 2-D tensors must be in `expected`, 1-D ones F32 and
/// bit-identical. Each 2-D element's error is divided by its format's bound.
Comparison compareWithReference(const std::string &name, ElementType expected) {
  GGUFFile ref = GGUFFile::open(model("tiny-0.5M-f32.gguf"));
  GGUFFile q = GGUFFile::open(model(name));
  Comparison c;
  EXPECT_EQ(q.tensors().size(), ref.tensors().size());
  for (const TensorInfo &t : q.tensors()) {
    SCOPED_TRACE(name + " tensor " + t.name);
    const TensorInfo *r = ref.findTensor(t.name);
    if (!r) {
      ADD_FAILURE() << "not in the f32 file";
      continue;
    }
    EXPECT_EQ(r->type, ElementType::F32);
    EXPECT_EQ(t.shape, r->shape);
    if (t.shape != r->shape)
      continue;
    std::vector<float> w = floatsOf(q, t), wRef = floatsOf(ref, *r);
    if (t.shape.size() == 1) {
      EXPECT_EQ(t.type, ElementType::F32);
      EXPECT_EQ(w, wRef);
      continue;
    }
    EXPECT_EQ(t.shape.size(), 2u);
    EXPECT_EQ(t.type, expected);
    if (t.type != expected)
      continue;
    ++c.tensors;
    int64_t violations = 0; // Only the first few are reported one by one.
    for (size_t b = 0; b < w.size(); b += 32) {
      // Per-32-block bound for the quantized formats (see the test below).
      double bound = 0;
      if (expected != ElementType::BF16) {
        float amax = 0, max = 0;
        for (size_t i = b; i < b + 32; ++i)
          if (std::fabs(wRef[i]) > amax) {
            amax = std::fabs(wRef[i]);
            max = wRef[i];
          }
        const uint8_t *block =
            q.data(t) + (b / 32) * uint64_t(blockBytes(expected));
        double stored = halfToFloat(storedScale(block));
        if (expected == ElementType::Q8_0) {
          double d = amax / 127.0;
          bound = d * 0.5 * (1 + 1e-3) + 127 * std::fabs(stored - d);
        } else {
          double d = max / -8.0;
          bound = std::fabs(d) * (1 + 1e-3) + 8 * std::fabs(stored - d);
        }
      }
      for (size_t i = b; i < b + 32 && i < w.size(); ++i) {
        double err = std::fabs(double(w[i]) - double(wRef[i]));
        double elementBound = expected == ElementType::BF16
                                  ? std::ldexp(std::fabs(wRef[i]), -8)
                                  : bound;
        double ratio = err == 0 ? 0 : err / elementBound;
        c.worstRatio = std::max(c.worstRatio, ratio);
        c.worstAbs = std::max(c.worstAbs, err);
        if (!(ratio <= 1.0) && ++violations <= 5)
          ADD_FAILURE() << "element " << i << ": " << w[i] << " vs " << wRef[i]
                        << ", error " << err << " > bound " << elementBound;
        ++c.elements;
      }
    }
    EXPECT_EQ(violations, 0) << "weights outside the bound";
  }
  std::cout << "[          ] " << name << ": " << c.tensors << " 2-D tensors, "
            << c.elements
            << " weights, worst |error| / bound = " << c.worstRatio
            << " (worst |error| " << c.worstAbs << ")\n";
  return c;
}

// Q8_0 (llama.cpp quantize_row_q8_0_ref): d = amax/127, q = round(x/d),
// stored scale d' = f16(d). |d'q - x| <= |q||d' - d| + |dq - x|
// <= 127|d' - d| + d/2.
TEST(GGUFFixtures, TinyQ8_0DequantizesWithinBound) {
  KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-f32.gguf"));
  KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-q8_0.gguf"));
  Comparison c = compareWithReference("tiny-0.5M-q8_0.gguf", ElementType::Q8_0);
  RecordProperty("worst_ratio", std::to_string(c.worstRatio));
  EXPECT_EQ(c.tensors, 16);
  EXPECT_GT(c.worstRatio, 0.5); // The bound is tight, not vacuous.
}

// Q4_0 (quantize_row_q4_0_ref): d = m/-8 for m the value of largest
// magnitude, q = min(15, trunc(x/d + 8.5)). Rounding costs |d|/2, but the
// clamp at 15 (x/d near +8) can cost up to |d|; the f16 scale adds
// |q - 8||d' - d| <= 8|d' - d|.
TEST(GGUFFixtures, TinyQ4_0DequantizesWithinBound) {
  KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-f32.gguf"));
  KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-q4_0.gguf"));
  Comparison c = compareWithReference("tiny-0.5M-q4_0.gguf", ElementType::Q4_0);
  RecordProperty("worst_ratio", std::to_string(c.worstRatio));
  EXPECT_EQ(c.tensors, 16);
  EXPECT_GT(c.worstRatio, 0.4);
}

// BF16 keeps 8 significant bits and rounds to nearest even: the relative
// error is at most the unit roundoff 2^-8 (reached just above a power of
// two); and each value is exactly floatToBf16 of its source.
TEST(GGUFFixtures, TinyBF16DequantizesWithinBound) {
  KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-f32.gguf"));
  KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-bf16.gguf"));
  Comparison c = compareWithReference("tiny-0.5M-bf16.gguf", ElementType::BF16);
  RecordProperty("worst_ratio", std::to_string(c.worstRatio));
  EXPECT_EQ(c.tensors, 16);
  EXPECT_GT(c.worstRatio, 0.5);

  GGUFFile ref = GGUFFile::open(model("tiny-0.5M-f32.gguf"));
  GGUFFile q = GGUFFile::open(model("tiny-0.5M-bf16.gguf"));
  for (const TensorInfo &t : q.tensors()) {
    if (t.type != ElementType::BF16)
      continue;
    std::vector<float> wRef = floatsOf(ref, *ref.findTensor(t.name));
    const uint8_t *p = q.data(t);
    for (size_t i = 0; i < wRef.size(); ++i)
      ASSERT_EQ(storedScale(p + 2 * i), floatToBf16(wRef[i]))
          << t.name << " element " << i;
  }
}

// llama-quantize's F16 conversion is IEEE round to nearest even too: every
// stored half equals floatToHalf of the F32 weight.
TEST(GGUFFixtures, Stories260KF16MatchesFloatToHalf) {
  KILN_REQUIRE_TEST_FILE(model("stories260K-f32.gguf"));
  KILN_REQUIRE_TEST_FILE(model("stories260K-f16.gguf"));
  GGUFFile ref = GGUFFile::open(model("stories260K-f32.gguf"));
  GGUFFile half = GGUFFile::open(model("stories260K-f16.gguf"));
  int halfTensors = 0;
  for (const TensorInfo &t : half.tensors()) {
    const TensorInfo *r = ref.findTensor(t.name);
    ASSERT_TRUE(r) << t.name;
    ASSERT_EQ(t.shape, r->shape) << t.name;
    std::vector<float> wRef = floatsOf(ref, *r);
    if (t.type == ElementType::F32) {
      EXPECT_EQ(floatsOf(half, t), wRef) << t.name;
      continue;
    }
    ASSERT_EQ(t.type, ElementType::F16) << t.name;
    ++halfTensors;
    const uint8_t *p = half.data(t);
    for (size_t i = 0; i < wRef.size(); ++i)
      ASSERT_EQ(storedScale(p + 2 * i), floatToHalf(wRef[i]))
          << t.name << " element " << i;
  }
  EXPECT_GE(halfTensors, 5 * 7);
}

// The test writer's quantizers are llama.cpp's algorithm: they reproduce
// llama-quantize's blocks byte for byte. (An exact tie in x/d could round
// differently in llama.cpp's SIMD code; these random weights have none.)
TEST(GGUFFixtures, WriterQuantizersMatchLlamaCpp) {
  KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-f32.gguf"));
  KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-q8_0.gguf"));
  KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-q4_0.gguf"));
  GGUFFile ref = GGUFFile::open(model("tiny-0.5M-f32.gguf"));
  for (ElementType type : {ElementType::Q8_0, ElementType::Q4_0}) {
    GGUFFile q = GGUFFile::open(
        model(std::string("tiny-0.5M-") + elementTypeName(type) + ".gguf"));
    int64_t blocks = 0, identical = 0;
    for (const TensorInfo &t : q.tensors()) {
      if (t.type != type)
        continue;
      std::vector<float> wRef = floatsOf(ref, *ref.findTensor(t.name));
      std::string mine =
          type == ElementType::Q8_0 ? q8_0Bytes(wRef) : q4_0Bytes(wRef);
      std::string theirs = asString(q.data(t), t.bytes);
      ASSERT_EQ(mine.size(), theirs.size());
      size_t bb = size_t(blockBytes(type));
      for (size_t off = 0; off < mine.size(); off += bb, ++blocks)
        identical += mine.compare(off, bb, theirs, off, bb) == 0;
    }
    std::cout << "[          ] " << elementTypeName(type) << ": " << identical
              << " of " << blocks << " blocks identical to llama.cpp's\n";
    EXPECT_EQ(identical, blocks);
    EXPECT_EQ(blocks, 16384);
  }
}

} // namespace
