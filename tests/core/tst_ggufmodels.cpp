// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF files as models (tests/fixtures/gguf, made by make_gguf.py): every tensor type dequantized
// bit for bit as numpy's transcription of ggml's dequantize_row_* gives it; the seven
// architectures mapped onto the same Architecture and weights as the safetensors folders they were
// converted from (llama's permuted q/k rows, Llama 3's rope_freqs, Gemma's stored 1 + w norms,
// Gemma 3's hard-coded sliding pattern); the forward of each file, of a Q8_0 and of a Q4_K_M file
// against the float64 reference on the dequantized weights; the tokenizers from the metadata;
// quantized weights kept quantized; bad files refused with one line naming the file and the field.
#include "testpaths.h"
#include "attnviz/gguf.h"
#include "attnviz/pretrained.h"
#include "attnviz/tensorarchive.h"
#include "modelchecks.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cstring>

using namespace attnviz;
using namespace attnviz::testing;

namespace {

QString gguf(const QString &name) { return QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/")) + name; }

QJsonObject expected()
{
    QFile f(gguf(QStringLiteral("expected.json")));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

std::unique_ptr<Model> openGguf(const QString &name)
{
    std::unique_ptr<Model> m;
    const Status st = openPretrained(gguf(name).toStdString(), {}, m);
    if (!st)
        qWarning("%s", st.message.c_str());
    return m;
}

// The largest difference between the attention weights of two traces of the same ids.
double attentionDifference(const Trace<float> &a, const Trace<float> &b)
{
    double worst = 0;
    if (a.numLayers() != b.numLayers() || a.numHeads() != b.numHeads())
        return INFINITY;
    for (int l = 0; l < a.numLayers(); ++l)
        for (int h = 0; h < a.numHeads(); ++h)
            worst =
                std::max(worst, double((a.weights(l, h).toDense() - b.weights(l, h).toDense()).cwiseAbs().maxCoeff()));
    return worst;
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The bytes a GGUF value of `type` takes at `at` (scalars, strings, arrays of them).
qint64 valueBytes(const QByteArray &b, qint64 at, uint32_t type)
{
    static const int kWidth[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    auto u64 = [&](qint64 p) {
        uint64_t v = 0;
        std::memcpy(&v, b.constData() + p, 8);
        return qint64(v);
    };
    if (type == uint32_t(GgufValueType::String))
        return 8 + u64(at);
    if (type != uint32_t(GgufValueType::Array))
        return kWidth[type];
    uint32_t et = 0;
    std::memcpy(&et, b.constData() + at, 4);
    const qint64 n = u64(at + 4);
    qint64 size = 12;
    for (qint64 k = 0; k < n; ++k)
        size += valueBytes(b, at + size, et);
    return size;
}

// `file` with metadata `key` given type `type` and the value bytes `value` (the key must be there);
// the tensor infos and the data section are kept, the data moved to the new aligned start.
QByteArray withKey(const QByteArray &file, const QByteArray &key, GgufValueType type, const QByteArray &value)
{
    uint64_t nTensors = 0, nKv = 0;
    std::memcpy(&nTensors, file.constData() + 8, 8);
    std::memcpy(&nKv, file.constData() + 16, 8);
    qint64 at = 24, begin = -1, end = -1;
    for (uint64_t k = 0; k < nKv; ++k) {
        const qint64 entry = at;
        const qint64 keyLength = valueBytes(file, at, uint32_t(GgufValueType::String));
        const QByteArray name = file.mid(int(at + 8), int(keyLength - 8));
        uint32_t t = 0;
        std::memcpy(&t, file.constData() + at + keyLength, 4);
        at += keyLength + 4;
        at += valueBytes(file, at, t);
        if (name == key)
            begin = entry, end = at;
    }
    for (uint64_t k = 0; k < nTensors; ++k) { // name, n_dims, ne[n_dims], type, offset
        at += valueBytes(file, at, uint32_t(GgufValueType::String));
        uint32_t dims = 0;
        std::memcpy(&dims, file.constData() + at, 4);
        at += 4 + 8 * qint64(dims) + 4 + 8;
    }
    const qint64 dataStart = (at + 31) / 32 * 32;
    if (begin < 0)
        return {};
    QByteArray entry;
    const uint64_t keyLength = uint64_t(key.size());
    entry.append(reinterpret_cast<const char *>(&keyLength), 8).append(key);
    const uint32_t t = uint32_t(type);
    entry.append(reinterpret_cast<const char *>(&t), 4).append(value);
    QByteArray out = file.left(int(begin)) + entry + file.mid(int(end), int(at - end));
    out.append(QByteArray(int((32 - out.size() % 32) % 32), '\0'));
    return out + file.mid(int(dataStart));
}

// The value bytes of metadata `key` in `file` (empty when absent).
QByteArray keyValue(const QByteArray &file, const QByteArray &key)
{
    uint64_t nKv = 0;
    std::memcpy(&nKv, file.constData() + 16, 8);
    qint64 at = 24;
    for (uint64_t k = 0; k < nKv; ++k) {
        const qint64 keyLength = valueBytes(file, at, uint32_t(GgufValueType::String));
        const QByteArray name = file.mid(int(at + 8), int(keyLength - 8));
        uint32_t t = 0;
        std::memcpy(&t, file.constData() + at + keyLength, 4);
        at += keyLength + 4;
        const qint64 size = valueBytes(file, at, t);
        if (name == key)
            return file.mid(int(at), int(size));
        at += size;
    }
    return {};
}

QByteArray ggufString(const QByteArray &s)
{
    const uint64_t n = uint64_t(s.size());
    return QByteArray(reinterpret_cast<const char *>(&n), 8) + s;
}

} // namespace

class TestGgufModels : public QObject {
    Q_OBJECT
private slots:
    // Every type against numpy's dequantization (the fixture's "<name>.expected" tensor), bit for bit.
    void dequantizesEveryTypeExactly()
    {
        TensorArchive a;
        GgufFile f;
        const Status st = a.openGguf(gguf(QStringLiteral("types.gguf")).toStdString(), &f);
        QVERIFY2(st.ok(), st.message.c_str());
        QCOMPARE(f.alignment, uint64_t(64));
        int types = 0;
        for (const char *t : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "iq4_nl"}) {
            const std::string name = std::string("w.") + t;
            const TensorEntry *e = a.find(name), *x = a.find(name + ".expected");
            QVERIFY2(e && x, name.c_str());
            QCOMPARE(e->shape, (std::vector<int64_t>{4, 512}));
            std::vector<float> got(e->count), want(x->count);
            QVERIFY(a.read(*e, got.data()).ok());
            QVERIFY(a.read(*x, want.data()).ok());
            QVERIFY2(std::memcmp(got.data(), want.data(), got.size() * 4) == 0, name.c_str());
            std::vector<double> wide(e->count); // the float64 path widens the same floats
            QVERIFY(a.read(*e, wide.data()).ok());
            for (size_t i = 0; i < wide.size(); ++i)
                QCOMPARE(wide[i], double(want[i]));
            ++types;
        }
        QCOMPARE(types, 12);
    }

    // A type attnviz does not decode: refused when read, naming the tensor and the type.
    void refusesOtherTypes()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("q2k.gguf"));
        QByteArray b("GGUF");
        auto put = [&](auto v) { b.append(reinterpret_cast<const char *>(&v), sizeof v); };
        put(uint32_t(3));
        put(uint64_t(1));
        put(uint64_t(0));
        put(uint64_t(5));
        b.append("blk.0");
        put(uint32_t(1));
        put(uint64_t(256));
        put(uint32_t(ggml::Q2_K));
        put(uint64_t(0));
        while (b.size() % 32)
            b.append('\0');
        b.append(QByteArray(84, '\0'));
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(b);
        out.close();
        TensorArchive a;
        QVERIFY(a.openGguf(path.toStdString()).ok());
        std::vector<float> v(256);
        const Status st = a.read(*a.find("blk.0"), v.data());
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("tensor \"blk.0\" is Q2_K, a type attnviz does not dequantize") != std::string::npos,
                 st.message.c_str());
    }

    // Each file against the float64 forward on its dequantized weights (expected.json).
    void forwardAgainstFloat64_data()
    {
        QTest::addColumn<QString>("name");
        const QJsonObject models = expected().value(QStringLiteral("models")).toObject();
        QVERIFY(models.size() >= 8);
        for (const QString &k : models.keys())
            QTest::newRow(qPrintable(k)) << k;
    }
    void forwardAgainstFloat64()
    {
        QFETCH(QString, name);
        auto m = openGguf(name + QStringLiteral(".gguf"));
        QVERIFY(m);
        const QJsonObject c = expected().value(QStringLiteral("models")).toObject().value(name).toObject()
                                  .value(QStringLiteral("cases")).toArray().first().toObject();
        checkCase<double>(*m, c, 1e-9);
        checkCase<float>(*m, c, 2e-4, 1e-4);
    }

    // The file converted from a safetensors folder computes what the folder computes: the same ids,
    // the same attention (Llama 3's rope_freqs are float32 divisors of the float64 formula: 1e-6).
    void sameAsTheFolder_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("folder");
        QTest::addColumn<double>("tol");
        QTest::newRow("llama") << "llama" << "llama-tiny" << 1e-5;
        QTest::newRow("qwen2") << "qwen2" << "qwen2-tiny" << 1e-6;
        QTest::newRow("qwen3") << "qwen3" << "qwen3-tiny" << 1e-6;
        QTest::newRow("phi3") << "phi3" << "phi3-tiny" << 1e-5;
        QTest::newRow("gpt2") << "gpt2" << "gpt2-tiny" << 1e-6;
    }
    void sameAsTheFolder()
    {
        QFETCH(QString, family);
        QFETCH(QString, folder);
        QFETCH(double, tol);
        auto g = openGguf(family + QStringLiteral(".gguf"));
        auto s = open(folder);
        QVERIFY(g && s);
        const Architecture &a = g->info().architecture, &b = s->info().architecture;
        QCOMPARE(a.family, b.family);
        QCOMPARE(a.layers, b.layers);
        QCOMPARE(a.heads, b.heads);
        QCOMPARE(a.kvHeads, b.kvHeads);
        QCOMPARE(a.dHead, b.dHead);
        QCOMPARE(a.dFeedForward, b.dFeedForward);
        QCOMPARE(a.norm, b.norm);
        QCOMPARE(a.qkvBias, b.qkvBias);
        QCOMPARE(a.qkNorm, b.qkNorm);
        QCOMPARE(a.rope.dims, b.rope.dims);
        QCOMPARE(a.rope.theta, b.rope.theta);
        QCOMPARE(a.window, b.window);
        QCOMPARE(a.tiedEmbeddings, b.tiedEmbeddings);
        QCOMPARE(g->info().vocabulary, 1024);
        TraceRequest r;
        r.ids = {17, 301, 5, 999, 42, 42, 640, 3, 77, 512, 260, 1000, 9, 88};
        Trace<float> x, y;
        QVERIFY(g->trace(r, x).ok());
        QVERIFY(s->trace(r, y).ok());
        const double d = attentionDifference(x, y);
        QVERIFY2(d < tol, qPrintable(QString::number(d)));
        QCOMPARE(int(x.layers.back().output.rows()), 14);
    }

    // What llama.cpp hard-codes or bakes in, read back.
    void conversionTraps()
    {
        auto llama = openGguf(QStringLiteral("llama.gguf"));
        QVERIFY(llama);
        // rope_freqs: Llama 3's scaling as per-frequency divisors (factor 32 on the lowest frequency)
        const Rope &r = llama->info().architecture.rope;
        QCOMPARE(r.type, RopeType::LongRope);
        QCOMPARE(r.shortFactor.size(), size_t(4));
        QCOMPARE(r.shortFactor.front(), 1.0);
        QCOMPARE(r.shortFactor.back(), 32.0);
        QCOMPARE(r.attentionFactor, 1.0);
        auto g2 = openGguf(QStringLiteral("gemma2.gguf"));
        auto g3 = openGguf(QStringLiteral("gemma3.gguf"));
        QVERIFY(g2 && g3);
        const Architecture &a2 = g2->info().architecture, &a3 = g3->info().architecture;
        QCOMPARE(a2.norm, NormKind::RmsNorm); // the file's weights are 1 + w already
        QCOMPARE(a3.norm, NormKind::RmsNorm);
        QCOMPARE(a2.scale(), 1 / std::sqrt(8.0)); // llama.cpp: 1/sqrt(head_dim), not query_pre_attn_scalar
        QCOMPARE(a2.attentionSoftcap, 50.0);
        QCOMPARE(a2.finalSoftcap, 30.0);
        QCOMPARE(a2.window, (std::vector<int>{4, 0}));
        // Gemma 3: five sliding layers to one global, sliding layers on base 10,000 (not in the file)
        QCOMPARE(a3.window, (std::vector<int>{4, 4, 4}));
        QVERIFY(a3.localRope);
        QCOMPARE(a3.ropeLocal.theta, 10000.0);
        QCOMPARE(a3.rope.theta, 1e6);
        QCOMPARE(a3.rope.type, RopeType::Linear);
        QCOMPARE(a3.rope.factor, 8.0);
        QCOMPARE(a3.embeddingScale, double(float(std::sqrt(12.0))));
        auto phi = openGguf(QStringLiteral("phi3.gguf"));
        QVERIFY(phi);
        QCOMPARE(phi->info().architecture.rope.dims, 6);
        QCOMPARE(phi->info().architecture.rope.type, RopeType::LongRope);
        QCOMPARE(phi->info().architecture.rope.longFactor, (std::vector<double>{1.5, 4.0, 12.0}));
    }

    // tokenizer.ggml.*: the ids of a plain BPE on the file's vocabulary (make_gguf.py), BOS included.
    void tokenizers_data()
    {
        QTest::addColumn<QString>("family");
        for (const char *f : {"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "gpt2"})
            QTest::newRow(f) << QString::fromLatin1(f);
    }
    void tokenizers()
    {
        QFETCH(QString, family);
        auto m = openGguf(family + QStringLiteral(".gguf"));
        QVERIFY(m);
        const QJsonArray cases = expected().value(QStringLiteral("tokenization")).toObject().value(family).toArray();
        QCOMPARE(cases.size(), 3);
        for (const QJsonValue &v : cases) {
            const QJsonObject c = v.toObject();
            std::vector<TraceToken> toks;
            const Status st = m->tokenize(c.value(QStringLiteral("text")).toString().toStdString(), toks);
            QVERIFY2(st.ok(), st.message.c_str());
            std::vector<int> got;
            for (const TraceToken &t : toks)
                got.push_back(t.id);
            const std::vector<int> want = idsOf(c);
            if (got != want) {
                QString g, w;
                for (int i : got)
                    g += QString::number(i) + QLatin1Char(' ');
                for (int i : want)
                    w += QString::number(i) + QLatin1Char(' ');
                QFAIL(qPrintable(c.value(QStringLiteral("text")).toString() + QStringLiteral(": got ") + g +
                                 QStringLiteral("want ") + w));
            }
        }
        QVERIFY(m->info().tokenizer.find("GGUF metadata") != std::string::npos);
    }

    // Q4_K_M: the quantization named per kind of tensor; every weight matrix kept as stored.
    void quantizedStaysQuantized()
    {
        auto m = openGguf(QStringLiteral("llama-q4_k.gguf"));
        QVERIFY(m);
        const ModelInfo i = m->info();
        QVERIFY2(i.dtype.rfind("Q4_K_M (GGUF; ", 0) == 0, i.dtype.c_str());
        QVERIFY2(i.dtype.find("attention Q4_K / Q5_0 / Q6_K") != std::string::npos, i.dtype.c_str());
        QVERIFY2(i.dtype.find("MLP Q4_K / Q6_K") != std::string::npos, i.dtype.c_str());
        QVERIFY2(i.dtype.find("norms F32") != std::string::npos, i.dtype.c_str());
        // as the file stores it: the attention projections q, k Q4_K (a 256-wide row is 144 bytes), v Q6_K
        // (210), o Q4_K in layer 0 and Q5_0 (8 blocks of 22 bytes) in layer 1; embeddings Q4_K (1024 rows
        // x 144 bytes), LM head Q6_K (1024 x 210), gate and up Q4_K (4 x 512 x 144), down Q6_K
        // (2 x 256 x 420), norms F32
        const int64_t attention = 2 * (256 * 144 + 128 * 144 + 128 * 210) + 256 * 144 + 256 * 176;
        const int64_t stored = 1024 * 144 + 1024 * 210 + 4 * 512 * 144 + 2 * 256 * 420 + (2 * 2 * 256 + 256) * 4;
        QCOMPARE(i.weightBytes, attention + stored);
        QCOMPARE(i.parameters, int64_t(1024 * 256 * 2 + 2 * (256 * 256 * 2 + 128 * 256 * 2 + 512 * 256 * 3 + 2 * 256) + 256));
    }

    // Seeded quantized weights (bench --seeded --dtype q8_0|q4_k): the float32 trace through the
    // block-widening products against the float64 trace of the same (dequantized) weights.
    void seededQuantized()
    {
        Architecture a;
        QVERIFY(seededShape("llama3.2-1b", a));
        a.layers = 2;
        a.dModel = 256;
        a.heads = 4;
        a.kvHeads = 2;
        a.dHead = 64;
        a.rope.dims = 64;
        a.dFeedForward = 512;
        a.vocabulary = 300;
        a.window.assign(2, 0);
        for (const char *dtype : {"Q8_0", "Q4_K"}) {
            std::unique_ptr<Model> m;
            const Status st = seededPretrained(a, 9, m, dtype);
            QVERIFY2(st.ok(), st.message.c_str());
            const ModelInfo i = m->info();
            QCOMPARE(i.dtype, std::string(dtype) + " (seeded)");
            // tokens (tied LM head), q/k/v/o and gate/up/down elements, all quantized
            const int64_t packed = 300 * 256 + 2 * int64_t(256 + 128 + 128 + 256) * 256 + 2 * 3 * 512 * 256;
            const int64_t blockBytes = std::string(dtype) == "Q8_0" ? 34 * packed / 32 : 144 * packed / 256;
            QCOMPARE(i.weightBytes, blockBytes + (2 * 2 * 256 + 256) * 4);
            QCOMPARE(i.parameters, packed + 2 * 2 * 256 + 256);
            TraceRequest r;
            r.ids = {1, 20, 300 - 1, 7, 7, 150, 42, 3};
            auto rel = [](const auto &x, const auto &y) {
                return double((x.template cast<double>() - y).cwiseAbs().maxCoeff()) / std::max(1e-30, double(y.cwiseAbs().maxCoeff()));
            };
            Trace<float> f;
            Trace<double> d;
            for (int extra = 0; extra < 3; ++extra) { // the full trace, then tokens appended one at a time
                QVERIFY(m->trace(r, f).ok());
                QVERIFY(m->trace(r, d).ok());
                QVERIFY2(rel(f.final, d.final) < 1e-5, qPrintable(QString::number(rel(f.final, d.final))));
                for (int l = 0; l < a.layers; ++l)
                    for (int h = 0; h < a.heads; ++h)
                        QVERIFY(rel(f.weights(l, h).toDense(), d.weights(l, h).toDense()) < 1e-5);
                QCOMPARE(f.predictions.next.back().front().id, d.predictions.next.back().front().id);
                r.ids.push_back(11 * extra + 5);
            }
        }
        a.dFeedForward = 500; // not whole Q4_K blocks
        std::unique_ptr<Model> m;
        const Status st = seededPretrained(a, 9, m, "Q4_K");
        QVERIFY(!st.ok());
        QVERIFY2(st.message.find("multiples of 256") != std::string::npos, st.message.c_str());
    }

    void badFiles()
    {
        QTemporaryDir dir;
        const QByteArray good = readAll(gguf(QStringLiteral("llama.gguf")));
        QVERIFY(!good.isEmpty());
        auto tryOpen = [&](const QByteArray &bytes, const char *needle) {
            const QString path = dir.filePath(QStringLiteral("bad.gguf"));
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(bytes);
            f.close();
            std::unique_ptr<Model> m;
            const Status st = openPretrained(path.toStdString(), {}, m);
            QVERIFY(!st.ok());
            QVERIFY2(st.message.rfind(path.toStdString() + ": ", 0) == 0, st.message.c_str());
            QVERIFY2(st.message.find('\n') == std::string::npos, st.message.c_str());
            QVERIFY2(st.message.find(needle) != std::string::npos, st.message.c_str());
        };
        QByteArray b = good;
        b.replace("general.architecture", "general.architecturX");
        tryOpen(b, "metadata \"general.architecture\": missing");
        b = good;
        b.replace("llama.block_count", "llama.block_counX");
        tryOpen(b, "metadata \"llama.block_count\": missing");
        tryOpen(good.left(good.size() / 2), "truncated");
        tryOpen(good.left(100), "header: metadata count");
        b = good;
        b.replace("token_embd.weight", "token_embX.weight");
        tryOpen(b, "tensor \"token_embd.weight\": missing");
        b = good; // the tensor count one short: the data would be read from before where they are
        uint64_t n = 0;
        std::memcpy(&n, b.constData() + 8, 8);
        --n;
        std::memcpy(b.data() + 8, &n, 8);
        tryOpen(b, "bytes past the data of the last tensor");
    }

    // Keys of the wrong type are refused as llama.cpp's loader refuses them, naming the key and the
    // type expected (a string "true" is not read as false, a float array not truncated to integers).
    void wrongTypes_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("key");
        QTest::addColumn<int>("type");
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<QString>("message");
        const uint32_t u32 = 7;
        const QByteArray seven(reinterpret_cast<const char *>(&u32), 4);
        QByteArray floats;
        const uint32_t f32 = uint32_t(GgufValueType::Float32);
        const uint64_t two = 2;
        const float ff[2] = {96.0f, 96.0f}; // the file's own width, as floats: read silently as 96 once
        floats.append(reinterpret_cast<const char *>(&f32), 4).append(reinterpret_cast<const char *>(&two), 8);
        floats.append(reinterpret_cast<const char *>(ff), 8);
        const int str = int(GgufValueType::String), arr = int(GgufValueType::Array);
        QTest::newRow("add_bos_token a string")
            << "llama.gguf" << QByteArray("tokenizer.ggml.add_bos_token") << str << ggufString("true")
            << "metadata \"tokenizer.ggml.add_bos_token\": type string, expected bool";
        QTest::newRow("pre a uint32") << "qwen2.gguf" << QByteArray("tokenizer.ggml.pre") << int(GgufValueType::Uint32)
                                      << seven << "metadata \"tokenizer.ggml.pre\": type uint32, expected string";
        QTest::newRow("feed_forward_length floats")
            << "llama.gguf" << QByteArray("llama.feed_forward_length") << arr << floats
            << "metadata \"llama.feed_forward_length\": type array of float32, expected uint32";
        QTest::newRow("eps a string")
            << "llama.gguf" << QByteArray("llama.attention.layer_norm_rms_epsilon") << str << ggufString("1e-5")
            << "metadata \"llama.attention.layer_norm_rms_epsilon\": type string, expected float32";
        // a value out of range shown with the digits that tell it apart (not "0.000000 is outside 0.000000..0.5")
        const float zero = 0.0f;
        QTest::newRow("eps 0") << "llama.gguf" << QByteArray("llama.attention.layer_norm_rms_epsilon")
                               << int(GgufValueType::Float32) << QByteArray(reinterpret_cast<const char *>(&zero), 4)
                               << "metadata \"llama.attention.layer_norm_rms_epsilon\": 0 is outside 1e-30..0.5";
        QTest::newRow("model a uint32") << "llama.gguf" << QByteArray("tokenizer.ggml.model")
                                        << int(GgufValueType::Uint32) << seven
                                        << "metadata \"tokenizer.ggml.model\": type uint32, expected string";
    }
    void wrongTypes()
    {
        QFETCH(QString, file);
        QFETCH(QByteArray, key);
        QFETCH(int, type);
        QFETCH(QByteArray, value);
        QFETCH(QString, message);
        const QByteArray good = readAll(gguf(file));
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("wrong.gguf"));
        auto open = [&](const QByteArray &bytes) {
            QFile f(path);
            f.open(QIODevice::WriteOnly | QIODevice::Truncate);
            f.write(bytes);
            f.close();
            std::unique_ptr<Model> m;
            return openPretrained(path.toStdString(), {}, m);
        };
        // The rewriting itself is sound: the key given its own type again, the file opens.
        if (key == "tokenizer.ggml.add_bos_token") {
            const Status st = open(withKey(good, key, GgufValueType::Bool, QByteArray(1, '\1')));
            QVERIFY2(st.ok(), st.message.c_str());
        }
        const QByteArray bad = withKey(good, key, GgufValueType(type), value);
        QVERIFY2(!bad.isEmpty(), key.constData());
        const Status st = open(bad);
        QVERIFY2(!st.ok(),
                 qPrintable(file + QLatin1Char(' ') + QString::fromLatin1(key) + QStringLiteral(" accepted")));
        QVERIFY2(st.message.rfind(path.toStdString() + ": " + message.toStdString(), 0) == 0, st.message.c_str());
        QVERIFY2(st.message.find('\n') == std::string::npos, st.message.c_str());
    }

    // A SentencePiece vocabulary whose last normal token is 2,000,000 bytes: its merges are looked up where
    // both parts could be tokens, so the file opens (at once, not after minutes of lookups per byte)
    // and tokenizes.
    void longSentencePieceToken()
    {
        const QByteArray good = readAll(gguf(QStringLiteral("gemma2.gguf"))); // tokenizer.ggml.model "llama"
        const QByteArray key("tokenizer.ggml.tokens");
        const QByteArray tokens = keyValue(good, key);
        QVERIFY(!tokens.isEmpty());
        // array header (element type, count), then each string; the last normal token (type 1) replaced
        const QByteArray types = keyValue(good, "tokenizer.ggml.token_type");
        uint64_t n = 0;
        std::memcpy(&n, tokens.constData() + 4, 8);
        uint64_t last = n;
        for (uint64_t k = 0; k < n; ++k) {
            int32_t t = 0;
            std::memcpy(&t, types.constData() + 12 + 4 * k, 4);
            if (t == 1)
                last = k;
        }
        QVERIFY(last < n);
        qint64 at = 12;
        for (uint64_t k = 0; k < last; ++k)
            at += valueBytes(tokens, at, uint32_t(GgufValueType::String));
        const qint64 end = at + valueBytes(tokens, at, uint32_t(GgufValueType::String));
        const QByteArray value = tokens.left(int(at)) + ggufString(QByteArray(2000000, 'x')) + tokens.mid(int(end));
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("long.gguf"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(withKey(good, key, GgufValueType::Array, value));
        f.close();
        std::unique_ptr<Model> m;
        Status st = openPretrained(path.toStdString(), {}, m);
        QVERIFY2(st.ok(), st.message.c_str());
        std::vector<TraceToken> ids;
        st = m->tokenize("hello world", ids);
        QVERIFY2(st.ok(), st.message.c_str());
        QVERIFY(!ids.empty());
    }

    // Bytes changed anywhere (seeded): the file opens, or is refused in one line naming it; never a
    // crash (the fuzz target fuzz_gguf does the same under the sanitizers).
    void corruptedAnywhere()
    {
        QTemporaryDir dir;
        const QByteArray good = readAll(gguf(QStringLiteral("llama-q8_0.gguf")));
        const QString path = dir.filePath(QStringLiteral("c.gguf"));
        uint64_t state = 20261126;
        auto next = [&] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
        int refused = 0;
        for (int round = 0; round < 300; ++round) {
            QByteArray b = good;
            const int changes = 1 + int(next() % 4);
            for (int k = 0; k < changes; ++k) {
                // most changes in the header and metadata, where the sizes are
                const int at = int(next() % uint64_t(round % 3 ? 4096 : b.size()));
                b[at] = char(next() & 0xFF);
            }
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(b);
            f.close();
            std::unique_ptr<Model> m;
            const Status st = openPretrained(path.toStdString(), {}, m);
            if (st.ok())
                continue;
            ++refused;
            QVERIFY2(st.message.rfind(path.toStdString() + ": ", 0) == 0, st.message.c_str());
            QVERIFY2(st.message.find('\n') == std::string::npos, st.message.c_str());
        }
        QVERIFY(refused > 50);
    }
};

QTEST_GUILESS_MAIN(TestGgufModels)
#include "tst_ggufmodels.moc"
