// SPDX-License-Identifier: GPL-3.0-or-later
// The GGUF container reader (gguf.h): every metadata value type read back, arrays of arrays refused,
// general.alignment, versions 2 and 3, the summary a model list shows, and bad files (truncated at
// every byte, absurd counts and lengths, offsets out of range, misaligned or not where ggml lays
// the data, a tensor count short of the infos, overflowing shapes, unknown types), each refused
// with one line naming the file and the field.
#include "attnviz/gguf.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <string>
#include <vector>

using namespace attnviz;

namespace {

// Builds GGUF bytes in memory, as llama.cpp's writer lays them out.
class GgufBuilder {
public:
    explicit GgufBuilder(uint32_t version = 3) : m_version(version) {}

    template <typename T>
    static void put(std::string &b, T v)
    {
        b.append(reinterpret_cast<const char *>(&v), sizeof v);
    }
    static void putString(std::string &b, const std::string &s)
    {
        put<uint64_t>(b, s.size());
        b += s;
    }
    // A key with a raw value (type and bytes).
    void kvRaw(const std::string &key, GgufValueType type, const std::string &bytes)
    {
        putString(m_kv, key);
        put<uint32_t>(m_kv, uint32_t(type));
        m_kv += bytes;
        ++m_nKv;
    }
    void kvString(const std::string &key, const std::string &v)
    {
        std::string b;
        putString(b, v);
        kvRaw(key, GgufValueType::String, b);
    }
    void kvU32(const std::string &key, uint32_t v)
    {
        std::string b;
        put(b, v);
        kvRaw(key, GgufValueType::Uint32, b);
    }
    // A tensor with `bytes` of data (padded to the alignment in the data section).
    void tensor(const std::string &name, std::vector<uint64_t> ne, uint32_t type, const std::string &bytes)
    {
        putString(m_ti, name);
        put<uint32_t>(m_ti, uint32_t(ne.size()));
        for (uint64_t n : ne)
            put(m_ti, n);
        put(m_ti, type);
        put<uint64_t>(m_ti, m_data.size());
        m_data += bytes;
        while (m_data.size() % m_alignment)
            m_data += '\0';
        ++m_nTensors;
    }
    void setAlignment(uint32_t a) { m_alignment = a; }
    // `n` bytes in the data section before the next tensor's data (a layout ggml refuses).
    void gap(size_t n) { m_data += std::string(n, '\0'); }
    std::string bytes() const
    {
        std::string b = "GGUF";
        put(b, m_version);
        put(b, m_nTensors);
        put(b, m_nKv);
        b += m_kv;
        b += m_ti;
        while (b.size() % m_alignment)
            b += '\0';
        return b + m_data;
    }

private:
    uint32_t m_version;
    uint64_t m_nTensors = 0, m_nKv = 0;
    uint32_t m_alignment = 32;
    std::string m_kv, m_ti, m_data;
};

Status parse(const std::string &bytes, GgufFile &f, bool keep = true)
{
    GgufParseOptions o;
    o.keepArrays = keep;
    return parseGguf(reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size(), "t.gguf", f, o);
}

// A small valid file: llama with a Q4_K matrix and an F32 norm, and a gpt2 tokenizer of four tokens
// and one merge.
GgufBuilder llamaFile()
{
    GgufBuilder g;
    g.kvString("general.architecture", "llama");
    g.kvString("general.name", "Tiny Llama");
    g.kvU32("general.file_type", 15);
    g.kvU32("llama.context_length", 2048);
    g.kvString("tokenizer.ggml.model", "gpt2");
    const auto strings = [](const std::vector<std::string> &items) {
        std::string b;
        GgufBuilder::put<uint32_t>(b, uint32_t(GgufValueType::String));
        GgufBuilder::put<uint64_t>(b, items.size());
        for (const std::string &item : items)
            GgufBuilder::putString(b, item);
        return b;
    };
    g.kvRaw("tokenizer.ggml.tokens", GgufValueType::Array, strings({"a", "b", "c", "ab"}));
    g.kvRaw("tokenizer.ggml.merges", GgufValueType::Array, strings({"a b"}));
    g.tensor("blk.0.attn_q.weight", {256, 2}, ggml::Q4_K, std::string(2 * 144, '\x01'));
    g.tensor("blk.0.attn_norm.weight", {256}, ggml::F32, std::string(256 * 4, '\0'));
    return g;
}

void expectOneLine(const Status &st, const char *needle)
{
    QVERIFY2(!st.ok(), needle);
    QCOMPARE(st.code, StatusCode::ParseError);
    QVERIFY2(st.message.rfind("t.gguf: ", 0) == 0, st.message.c_str());
    QVERIFY2(st.message.find('\n') == std::string::npos, st.message.c_str());
    QVERIFY2(st.message.find(needle) != std::string::npos, st.message.c_str());
}

} // namespace

class TestGguf : public QObject {
    Q_OBJECT
private slots:
    // Sparse files whose metadata arrays hold 1,500,000,000 uint8, 10,000,000 empty arrays, or a
    // tokenizer array of 5,000,000 int32: the first two are checked against the file and skipped,
    // never materialised; the third is refused naming the key (no vocabulary is that long).
    void hugeArrays()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        auto raw = [](auto v) {
            std::string b;
            GgufBuilder::put(b, v);
            return b;
        };
        // "GGUF" v3, no tensors, general.architecture and `key` (an array of `n` elements of
        // `type`, `bytes` each, all zero: the file's sparse tail).
        auto open = [&](const std::string &key, GgufValueType type, uint64_t n, uint64_t bytes, GgufFile &f) {
            std::string b = "GGUF" + raw(uint32_t(3)) + raw(uint64_t(0)) + raw(uint64_t(2));
            GgufBuilder::putString(b, "general.architecture");
            b += raw(uint32_t(GgufValueType::String));
            GgufBuilder::putString(b, "llama");
            GgufBuilder::putString(b, key);
            b += raw(uint32_t(GgufValueType::Array)) + raw(uint32_t(type)) + raw(n);
            const QString path = dir.filePath(QString::fromStdString(key));
            QFile file(path);
            if (!file.open(QIODevice::ReadWrite | QIODevice::Truncate))
                return Status::error(StatusCode::IoError, "cannot write " + path.toStdString());
            file.write(b.data(), qint64(b.size()));
            file.resize(qint64((b.size() + n * bytes + 31) / 32 * 32)); // ftruncate: a sparse file
            const uint64_t size = uint64_t(file.size());
            const uchar *data = file.map(0, qint64(size));
            if (!data)
                return Status::error(StatusCode::IoError, "cannot map " + path.toStdString());
            return parseGguf(data, size, path.toStdString(), f, GgufParseOptions{});
        };
        GgufFile f;
        Status st = open("x.bytes", GgufValueType::Uint8, 1500000000u, 1, f);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(f.find("x.bytes")->count, uint64_t(1500000000u));
        QVERIFY(f.find("x.bytes")->numbers.empty());
        GgufFile g; // 10^8 empty arrays (12 bytes each): refused before any is walked
        st = open("x.arrays", GgufValueType::Array, 100000000u, 12, g);
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("metadata \"x.arrays\": an array of arrays") != std::string::npos, st.message.c_str());
        QCOMPARE(st.message.find('\n'), std::string::npos);
        GgufFile h;
        st = open("tokenizer.ggml.token_type", GgufValueType::Int32, 5000000u, 4, h);
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("tokenizer.ggml.token_type: metadata \"tokenizer.ggml.token_type\": array of "
                                 "5000000 elements, more than the 4194304 a tokenizer's may have") != std::string::npos,
                 st.message.c_str());
        QCOMPARE(st.message.find('\n'), std::string::npos);
    }

    void everyValueType()
    {
        GgufBuilder g;
        auto raw = [](auto v) {
            std::string b;
            GgufBuilder::put(b, v);
            return b;
        };
        g.kvRaw("u8", GgufValueType::Uint8, raw(uint8_t(200)));
        g.kvRaw("i8", GgufValueType::Int8, raw(int8_t(-100)));
        g.kvRaw("u16", GgufValueType::Uint16, raw(uint16_t(60000)));
        g.kvRaw("i16", GgufValueType::Int16, raw(int16_t(-30000)));
        g.kvRaw("u32", GgufValueType::Uint32, raw(uint32_t(4000000000u)));
        g.kvRaw("i32", GgufValueType::Int32, raw(int32_t(-2000000000)));
        g.kvRaw("f32", GgufValueType::Float32, raw(1.5f));
        g.kvRaw("bool", GgufValueType::Bool, raw(uint8_t(1)));
        g.kvString("str", "héllo");
        g.kvRaw("u64", GgufValueType::Uint64, raw(uint64_t(1) << 62));
        g.kvRaw("i64", GgufValueType::Int64, raw(int64_t(-5)));
        g.kvRaw("f64", GgufValueType::Float64, raw(0.1));
        // ["a", "bc"]
        std::string strs = raw(uint32_t(GgufValueType::String)) + raw(uint64_t(2));
        GgufBuilder::putString(strs, "a");
        GgufBuilder::putString(strs, "bc");
        g.kvRaw("strs", GgufValueType::Array, strs);
        std::string floats = raw(uint32_t(GgufValueType::Float32)) + raw(uint64_t(3)) + raw(-1.25f) + raw(0.0f) + raw(3.5f);
        g.kvRaw("floats", GgufValueType::Array, floats);
        g.kvU32("general.alignment", 64);
        g.setAlignment(64);
        g.tensor("w", {32, 2}, ggml::Q8_0, std::string(68, '\0'));
        g.tensor("b", {3}, ggml::F32, std::string(12, '\0'));

        GgufFile f;
        const std::string bytes = g.bytes();
        const Status st = parse(bytes, f);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(f.version, 3u);
        QCOMPARE(f.metadata.size(), size_t(15));
        QCOMPARE(f.find("u8")->u, uint64_t(200));
        QCOMPARE(f.find("i8")->i, int64_t(-100));
        QCOMPARE(f.find("u16")->u, uint64_t(60000));
        QCOMPARE(f.find("i16")->i, int64_t(-30000));
        QCOMPARE(f.find("u32")->u, uint64_t(4000000000u));
        QCOMPARE(f.find("i32")->i, int64_t(-2000000000));
        QCOMPARE(f.find("f32")->f, 1.5);
        QCOMPARE(f.find("bool")->i, int64_t(1));
        QCOMPARE(f.find("str")->s, std::string("héllo"));
        QCOMPARE(f.find("u64")->u, uint64_t(1) << 62);
        QCOMPARE(f.find("i64")->i, int64_t(-5));
        QCOMPARE(f.find("f64")->f, 0.1);
        QCOMPARE(f.find("strs")->strings, (std::vector<std::string>{"a", "bc"}));
        QCOMPARE(f.find("floats")->numbers, (std::vector<double>{-1.25, 0.0, 3.5}));
        QCOMPARE(f.alignment, uint64_t(64));
        QCOMPARE(f.dataOffset % 64, uint64_t(0));
        QCOMPARE(f.tensors.size(), size_t(2));
        const GgufTensorInfo *w = f.tensor("w");
        QCOMPARE(w->type, uint32_t(ggml::Q8_0));
        QCOMPARE(w->bytes, uint64_t(68));
        QCOMPARE(w->count, uint64_t(64));
        QCOMPARE(w->rows(), int64_t(2));
        QCOMPARE(w->offset, f.dataOffset);
        QCOMPARE(f.tensor("b")->offset, f.dataOffset + 128);

        // Arrays skipped, not kept (a summary's pass): counts still there.
        GgufFile skipped;
        QVERIFY(parse(bytes, skipped, false).ok());
        QCOMPARE(skipped.find("strs")->count, uint64_t(2));
        QVERIFY(skipped.find("strs")->strings.empty());
        QCOMPARE(skipped.find("str")->s, std::string("héllo"));
    }

    void version2()
    {
        GgufBuilder g(2);
        g.kvString("general.architecture", "qwen2");
        GgufFile f;
        QVERIFY(parse(g.bytes(), f).ok());
        QCOMPARE(f.version, 2u);
        QCOMPARE(f.find("general.architecture")->s, std::string("qwen2"));
    }

    void summary()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("tiny-llama.gguf").toStdString();
        {
            QFile out(QString::fromStdString(path));
            QVERIFY(out.open(QIODevice::WriteOnly));
            const std::string b = llamaFile().bytes();
            out.write(b.data(), qint64(b.size()));
        }
        QVERIFY(looksLikeGguf(path));
        GgufSummary s;
        const Status st = ggufSummary(path, s);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(s.architecture, std::string("llama"));
        QCOMPARE(s.name, std::string("Tiny Llama"));
        QCOMPARE(s.fileType, std::string("Q4_K_M"));
        QCOMPARE(s.parameters, int64_t(768));
        QCOMPARE(s.contextLength, 2048);
        QVERIFY2(s.supported, s.reason.c_str());

        // No file_type: the type holding most matrix weights; no name: the file's.
        GgufBuilder g;
        g.kvString("general.architecture", "mamba");
        g.tensor("a", {32, 4}, ggml::Q8_0, std::string(4 * 34, '\0'));
        g.tensor("b", {32, 2}, ggml::F16, std::string(128, '\0'));
        {
            QFile out(dir.filePath("x.gguf"));
            QVERIFY(out.open(QIODevice::WriteOnly));
            const std::string b = g.bytes();
            out.write(b.data(), qint64(b.size()));
        }
        QVERIFY(ggufSummary(dir.filePath("x.gguf").toStdString(), s).ok());
        QCOMPARE(s.name, std::string("x"));
        QCOMPARE(s.fileType, std::string("Q8_0"));
        QVERIFY(!s.supported);
        QVERIFY2(s.reason.find("\"mamba\" is not one attnviz computes") != std::string::npos, s.reason.c_str());

        // A type attnviz does not dequantize: named with its tensor.
        GgufBuilder q;
        q.kvString("general.architecture", "llama");
        q.kvString("tokenizer.ggml.model", "gpt2");
        q.tensor("blk.0.ffn_down.weight", {256, 1}, ggml::IQ2_XXS, std::string(66, '\0'));
        GgufFile f;
        QVERIFY(parse(q.bytes(), f).ok());
        const std::string why = ggufUnsupportedReason(f);
        QVERIFY2(why.find("\"blk.0.ffn_down.weight\" is IQ2_XXS") != std::string::npos, why.c_str());

        // Missing architecture: greyed with the field named.
        GgufBuilder none;
        QVERIFY(parse(none.bytes(), f).ok());
        QCOMPARE(ggufUnsupportedReason(f), std::string("metadata \"general.architecture\" is missing"));

        // Not a GGUF file at all.
        QFile junk(dir.filePath("junk.gguf"));
        QVERIFY(junk.open(QIODevice::WriteOnly));
        junk.write("PK\x03\x04 zip");
        junk.close();
        const Status bad = ggufSummary(dir.filePath("junk.gguf").toStdString(), s);
        QVERIFY(!bad.ok());
        QVERIFY2(bad.message.find("junk.gguf: not a GGUF file") != std::string::npos, bad.message.c_str());
        QVERIFY(!looksLikeGguf(dir.filePath("junk.gguf").toStdString()));
    }

    void fileTypeNames()
    {
        QCOMPARE(ggufFileTypeName(0), std::string("F32"));
        QCOMPARE(ggufFileTypeName(7), std::string("Q8_0"));
        QCOMPARE(ggufFileTypeName(15), std::string("Q4_K_M"));
        QCOMPARE(ggufFileTypeName(17), std::string("Q5_K_M"));
        QCOMPARE(ggufFileTypeName(32), std::string("BF16"));
        QCOMPARE(ggufFileTypeName(1024 + 15), std::string("Q4_K_M")); // "guessed" flag
        QCOMPARE(ggufFileTypeName(4), std::string());
        QCOMPARE(ggmlTypeName(ggml::Q6_K), std::string("Q6_K"));
        QCOMPARE(ggmlTypeName(77), std::string("type 77"));
        QCOMPARE(ggmlTypeInfo(ggml::Q4_K)->blockBytes, 144);
        QCOMPARE(ggmlTypeInfo(ggml::IQ4_NL)->blockElements, 32);
        QCOMPARE(quantizedModelNote("Q4_K_M (GGUF; attention Q4_K)"),
                 std::string("Q4_K_M \xE2\x80\x94 attention of the quantized model; close to, not identical with, the original's"));
        QCOMPARE(quantizedModelNote("IQ4_NL (GGUF; MLP IQ4_NL)").substr(0, 6), std::string("IQ4_NL"));
        QCOMPARE(quantizedModelNote("BF16 (GGUF; attention BF16)"), std::string());
        QCOMPARE(quantizedModelNote("F16+F32"), std::string());
    }

    void truncatedAnywhere()
    {
        const std::string full = llamaFile().bytes();
        GgufFile f;
        QVERIFY(parse(full, f).ok());
        for (size_t n = 0; n < full.size(); ++n) {
            const Status st = parse(full.substr(0, n), f);
            QVERIFY2(!st.ok(), std::to_string(n).c_str());
            QCOMPARE(st.code, StatusCode::ParseError);
            QVERIFY2(st.message.rfind("t.gguf: ", 0) == 0, st.message.c_str());
            QVERIFY2(st.message.find('\n') == std::string::npos, st.message.c_str());
        }
        // Cut inside the data: the tensor whose bytes are missing is named.
        expectOneLine(parse(full.substr(0, full.size() - 10), f), "tensor \"blk.0.attn_norm.weight\"");
    }

    void absurdClaims()
    {
        GgufFile f;
        auto raw = [](auto v) {
            std::string b;
            GgufBuilder::put(b, v);
            return b;
        };
        {
            GgufBuilder g; // an array of 2^60 uint32
            g.kvRaw("big", GgufValueType::Array, raw(uint32_t(GgufValueType::Uint32)) + raw(uint64_t(1) << 60));
            expectOneLine(parse(g.bytes(), f), "metadata \"big\": array of 1152921504606846976 uint32 elements");
        }
        {
            GgufBuilder g; // an array of 2^60 strings
            g.kvRaw("strs", GgufValueType::Array, raw(uint32_t(GgufValueType::String)) + raw(uint64_t(1) << 60));
            expectOneLine(parse(g.bytes(), f), "metadata \"strs\": array of");
        }
        {
            GgufBuilder g; // a string longer than the file
            g.kvRaw("s", GgufValueType::String, raw(uint64_t(1000)) + "abc");
            expectOneLine(parse(g.bytes(), f), "metadata \"s\": string length 1000 runs past the end");
        }
        {
            std::string b = "GGUF" + raw(uint32_t(3)) + raw(uint64_t(0)) + raw(uint64_t(1)) + raw(uint64_t(1) << 50) + "key" + std::string(16, 'x');
            expectOneLine(parse(b, f), "metadata entry 0 (key): string length 1125899906842624 runs past the end");
            b = "GGUF" + raw(uint32_t(3)) + raw(uint64_t(1) << 40) + raw(uint64_t(0));
            expectOneLine(parse(b, f), "header: tensor count 1099511627776 is more than");
            b = "GGUF" + raw(uint32_t(3)) + raw(uint64_t(0)) + raw(uint64_t(1) << 40);
            expectOneLine(parse(b, f), "header: metadata count 1099511627776 is more than");
        }
        {
            GgufBuilder g; // [[1, 2], [3]] of int32: ggml reads no arrays of arrays
            std::string v = raw(uint32_t(GgufValueType::Array)) + raw(uint64_t(2));
            v += raw(uint32_t(GgufValueType::Int32)) + raw(uint64_t(2)) + raw(int32_t(1)) + raw(int32_t(2));
            v += raw(uint32_t(GgufValueType::Int32)) + raw(uint64_t(1)) + raw(int32_t(3));
            g.kvRaw("nested", GgufValueType::Array, v);
            expectOneLine(parse(g.bytes(), f), "metadata \"nested\": an array of arrays (ggml and llama.cpp read no nested arrays)");
        }
        {
            GgufBuilder g;
            g.kvRaw("t", GgufValueType(99), raw(uint32_t(0)));
            expectOneLine(parse(g.bytes(), f), "metadata \"t\": value type 99 is not a GGUF value type");
        }
        {
            GgufBuilder g;
            g.kvString("a", "x");
            g.kvString("a", "y");
            expectOneLine(parse(g.bytes(), f), "metadata \"a\": given twice");
        }
    }

    void badTensors()
    {
        GgufFile f;
        {
            GgufBuilder g; // ne[] whose product overflows
            g.tensor("w", {uint64_t(1) << 32, uint64_t(1) << 32}, ggml::F32, "");
            expectOneLine(parse(g.bytes(), f), "tensor \"w\": ne [4294967296, 4294967296]: the product overflows");
        }
        {
            GgufBuilder g;
            g.tensor("w", {4}, 77, std::string(16, '\0'));
            expectOneLine(parse(g.bytes(), f), "tensor \"w\": type 77 is not a ggml tensor type");
        }
        {
            GgufBuilder g;
            g.tensor("w", {100}, ggml::Q8_0, std::string(200, '\0'));
            expectOneLine(parse(g.bytes(), f), "tensor \"w\": row length ne[0] = 100 is not a multiple of Q8_0's block of 32");
        }
        {
            GgufBuilder g;
            g.tensor("w", {1, 2, 3, 4, 5}, ggml::F32, "");
            expectOneLine(parse(g.bytes(), f), "tensor \"w\": n_dims 5 is more than ggml's 4");
        }
        {
            GgufBuilder g; // the offset field patched: past the end, then misaligned
            g.tensor("w", {8}, ggml::F32, std::string(32, '\0'));
            std::string b = g.bytes();
            const size_t at = b.find("w") + 1 + 4 + 8 + 4; // name, n_dims, ne[0], type
            uint64_t off = 1 << 20;
            std::memcpy(&b[at], &off, 8);
            expectOneLine(parse(b, f), "tensor \"w\": 32 bytes of F32 at offset 1048576 lie past the end");
            off = 4;
            std::memcpy(&b[at], &off, 8);
            expectOneLine(parse(b, f), "tensor \"w\": offset 4 is not a multiple of the alignment 32");
        }
        {
            GgufBuilder g; // the data section starts 32 bytes after the tensor infos' aligned end
            g.gap(32);
            g.tensor("w", {8}, ggml::F32, std::string(32, '\0'));
            expectOneLine(parse(g.bytes(), f), "tensor \"w\": offset 32, expected 0 (the first tensor's data start");
        }
        {
            GgufBuilder g; // a gap between two tensors
            g.tensor("a", {8}, ggml::F32, std::string(32, '\0'));
            g.gap(32);
            g.tensor("b", {8}, ggml::F32, std::string(32, '\0'));
            expectOneLine(parse(g.bytes(), f),
                          "tensor \"b\": offset 64, expected 32 (where the data of tensor \"a\" end");
        }
        {
            // The header's tensor count one short: the last tensor info is taken for padding and the
            // data section for starting that much earlier (every tensor would be read 64 bytes early).
            std::string b = llamaFile().bytes();
            QVERIFY(parse(b, f).ok());
            const uint64_t one = 1;
            std::memcpy(&b[8], &one, 8);
            expectOneLine(parse(b, f), "header: tensor count 1: the file holds ");
            expectOneLine(parse(b, f), "bytes past the data of the last tensor");
        }
        {
            GgufBuilder g;
            g.kvU32("general.alignment", 48);
            expectOneLine(parse(g.bytes(), f), "metadata \"general.alignment\": 48 is not a power of two");
        }
        {
            std::string b = "GGUF";
            GgufBuilder::put(b, uint32_t(1));
            expectOneLine(parse(b + std::string(16, '\0'), f), "GGUF version 1");
            b = "GGUF";
            GgufBuilder::put(b, uint32_t(0x03000000));
            expectOneLine(parse(b + std::string(16, '\0'), f), "big-endian");
        }
    }
};

QTEST_GUILESS_MAIN(TestGguf)
#include "tst_gguf.moc"
