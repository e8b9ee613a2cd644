// SPDX-License-Identifier: GPL-3.0-or-later
// Fake model stores for the suites of the store scan, `model list` and Model ▸ On this computer: a
// home folder with a Hugging Face cache (refs/main, snapshots linking into blobs/), an Ollama store
// (manifests naming blobs by their real sha256) and an LM Studio folder, built from the tiny fixture
// models and tiny GGUF files — with the broken cases beside the good ones: a manifest that is not
// JSON, a blob that is missing, a blob that is not GGUF, a blob shorter than its manifest says, a
// symbolic link loop, links out of the root, a model_type attnviz does not know, a PyTorch pickle.
// Header-only (Qt Core), like modelfolders.h.
#pragma once

#include "testpaths.h"
#include <QByteArray>
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QtEndian>

#include <unistd.h>

namespace attnviz_test {

inline bool writeBytes(const QString &path, const QByteArray &bytes)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

inline QByteArray fileBytes(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// A symbolic link at `link` whose text is `target` (relative targets stay relative, as in the HF cache).
inline bool makeLink(const QString &target, const QString &link)
{
    QDir().mkpath(QFileInfo(link).absolutePath());
    return ::symlink(target.toLocal8Bit().constData(), link.toLocal8Bit().constData()) == 0;
}

// A tiny GGUF (version 3) for the list only (no weights worth computing: the real GGUF models of the
// trees are tests/fixtures/gguf's) of a one-layer `arch` ("llama"): 8 wide, 2 heads, 16 tokens, F32 tensors
// of zeros (792 parameters), general.file_type `fileType` (what a list shows as its quantization:
// 0 F32, 7 Q8_0, 15 Q4_K_M), and a gpt2-style tokenizer of 16 tokens with an empty list of merges and
// tokenizer.ggml.pre `pre` unless `tokenizer` is false; `merges` false leaves that key out, `extra`
// adds string keys (a key of the wrong type).
inline QByteArray tinyGguf(const QByteArray &name = "tiny", const QByteArray &arch = "llama", quint32 fileType = 0,
                           bool tokenizer = true, bool merges = true, const QByteArray &pre = "default",
                           const QList<QPair<QByteArray, QByteArray>> &extra = {})
{
    QByteArray b;
    const auto u32 = [&](quint32 v) { b.append(reinterpret_cast<const char *>(&v), 4); };
    const auto u64 = [&](quint64 v) { b.append(reinterpret_cast<const char *>(&v), 8); };
    const auto str = [&](const QByteArray &s) {
        u64(quint64(s.size()));
        b.append(s);
    };
    struct Tensor {
        QByteArray name;
        QList<quint64> ne;
    };
    const QList<Tensor> tensors = {{"token_embd.weight", {8, 16}},     {"output_norm.weight", {8}},
                                   {"blk.0.attn_norm.weight", {8}},    {"blk.0.attn_q.weight", {8, 8}},
                                   {"blk.0.attn_k.weight", {8, 8}},    {"blk.0.attn_v.weight", {8, 8}},
                                   {"blk.0.attn_output.weight", {8, 8}}, {"blk.0.ffn_norm.weight", {8}},
                                   {"blk.0.ffn_gate.weight", {8, 16}}, {"blk.0.ffn_up.weight", {8, 16}},
                                   {"blk.0.ffn_down.weight", {16, 8}}};
    b.append("GGUF");
    u32(3);
    u64(quint64(tensors.size()));
    u64(quint64(10 + (tokenizer ? 3 + (merges ? 1 : 0) + extra.size() : 0)));
    const auto kvStr = [&](const QByteArray &k, const QByteArray &v) { str(k); u32(8); str(v); };
    const auto kvU32 = [&](const QByteArray &k, quint32 v) { str(k); u32(4); u32(v); };
    const auto kvF32 = [&](const QByteArray &k, float v) {
        str(k);
        u32(6);
        b.append(reinterpret_cast<const char *>(&v), 4);
    };
    kvStr("general.architecture", arch);
    kvStr("general.name", name);
    kvU32("general.file_type", fileType);
    kvU32(arch + ".block_count", 1);
    kvU32(arch + ".context_length", 64);
    kvU32(arch + ".embedding_length", 8);
    kvU32(arch + ".feed_forward_length", 16);
    kvU32(arch + ".attention.head_count", 2);
    kvU32(arch + ".attention.head_count_kv", 2);
    kvF32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
    if (tokenizer) {
        kvStr("tokenizer.ggml.model", "gpt2");
        kvStr("tokenizer.ggml.pre", pre);
        str("tokenizer.ggml.tokens");
        u32(9); // array
        u32(8); // of strings
        u64(16);
        for (char c = 'a'; c < 'a' + 16; ++c)
            str(QByteArray(1, c));
        if (merges) {
            str("tokenizer.ggml.merges");
            u32(9); // array
            u32(8); // of strings
            u64(0);
        }
        for (const auto &[key, value] : extra)
            kvStr(key, value);
    }
    quint64 offset = 0;
    for (const Tensor &t : tensors) {
        str(t.name);
        u32(quint32(t.ne.size()));
        quint64 n = 1;
        for (quint64 d : t.ne) {
            u64(d);
            n *= d;
        }
        u32(0); // F32
        u64(offset);
        offset += (n * 4 + 31) / 32 * 32;
    }
    while (b.size() % 32)
        b.append('\0');
    b.append(QByteArray(int(offset), '\0'));
    return b;
}

inline QString sha256Hex(const QByteArray &bytes)
{
    return QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex());
}

struct StoreTrees {
    QString base, home, hub, ollama, lmstudio, folder, elsewhere;
    qint64 ggufBytes = 0; // tinyGguf()'s size

    // The environment `model list` runs in: HOME here, the store variables unset or pointing here.
    QStringList environment() const
    {
        return {QStringLiteral("HOME=") + home, QStringLiteral("XDG_CACHE_HOME=") + home + QStringLiteral("/.cache"),
                QStringLiteral("XDG_CONFIG_HOME=") + base + QStringLiteral("/config")};
    }
};

// A Hugging Face cache repository: each file stored as blobs/<sha256> and linked from
// snapshots/<rev>/ by ../../blobs/<sha256>, and refs/main naming <rev> (none when `rev` is empty).
inline void hfRepo(const QString &hub, const QString &repo, const QList<QPair<QString, QByteArray>> &files,
                   const QString &rev = QStringLiteral("0123456789abcdef0123456789abcdef01234567"))
{
    const QString dir = hub + QStringLiteral("/models--") + QString(repo).replace(QLatin1Char('/'), QStringLiteral("--"));
    const QString snapshot = rev.isEmpty() ? QStringLiteral("fedcba9876543210") : rev;
    for (const auto &[name, bytes] : files) {
        const QString hash = sha256Hex(bytes + name.toUtf8());
        writeBytes(dir + QStringLiteral("/blobs/") + hash, bytes);
        makeLink(QStringLiteral("../../blobs/") + hash, dir + QStringLiteral("/snapshots/") + snapshot + QLatin1Char('/') + name);
    }
    if (!rev.isEmpty())
        writeBytes(dir + QStringLiteral("/refs/main"), rev.toLatin1());
}

// An Ollama manifest at manifests/HOST/NS/NAME/TAG whose layers are `layers` (media type suffix,
// bytes); blobs written under their sha256 unless `writeBlob` says otherwise. `claim` overrides the
// size the manifest gives the model layer.
inline void ollamaModel(const QString &root, const QString &path, const QByteArray &model, bool writeBlob = true,
                        qint64 claim = -1)
{
    const QList<QPair<QByteArray, QByteArray>> layers = {
        {"model", model}, {"template", "{{ .Prompt }}"}, {"params", "{\"stop\":[\"<|end|>\"]}"}};
    QByteArray json = "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
                      "\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"digest\":"
                      "\"sha256:" + sha256Hex("config").toLatin1() + "\",\"size\":6},\"layers\":[";
    for (int i = 0; i < layers.size(); ++i) {
        const QByteArray hash = sha256Hex(layers[i].second).toLatin1();
        const qint64 size = i == 0 && claim >= 0 ? claim : layers[i].second.size();
        json += (i ? "," : "") + QByteArray("{\"mediaType\":\"application/vnd.ollama.image.") + layers[i].first +
                "\",\"digest\":\"sha256:" + hash + "\",\"size\":" + QByteArray::number(size) + "}";
        if (i > 0 || writeBlob)
            writeBytes(root + QStringLiteral("/blobs/sha256-") + QString::fromLatin1(hash), layers[i].second);
    }
    json += "]}";
    writeBytes(root + QStringLiteral("/manifests/") + path, json);
}

inline QList<QPair<QString, QByteArray>> fixtureFiles(const QString &model, const QStringList &names)
{
    QList<QPair<QString, QByteArray>> files;
    for (const QString &n : names)
        files.append({n, fileBytes(QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + model + QLatin1Char('/') + n)});
    return files;
}

// The whole tree under `base` (an empty temporary folder).
inline StoreTrees buildStoreTrees(const QString &base)
{
    StoreTrees t;
    t.base = base;
    t.home = base + QStringLiteral("/home");
    t.hub = t.home + QStringLiteral("/.cache/huggingface/hub");
    t.ollama = t.home + QStringLiteral("/.ollama/models");
    t.lmstudio = t.home + QStringLiteral("/.lmstudio/models");
    t.folder = t.home + QStringLiteral("/models");
    t.elsewhere = base + QStringLiteral("/elsewhere");
    const QByteArray gguf = tinyGguf();
    t.ggufBytes = gguf.size();
    const QStringList gpt2 = {QStringLiteral("config.json"), QStringLiteral("model.safetensors"), QStringLiteral("vocab.json"),
                              QStringLiteral("merges.txt")};
    const QStringList qwen3 = {QStringLiteral("config.json"), QStringLiteral("model.safetensors"), QStringLiteral("tokenizer.json"),
                               QStringLiteral("tokenizer_config.json")};

    // Hugging Face
    hfRepo(t.hub, QStringLiteral("openai-community/gpt2-tiny"), fixtureFiles(QStringLiteral("gpt2-tiny"), gpt2));
    hfRepo(t.hub, QStringLiteral("Qwen/Qwen3-tiny"), fixtureFiles(QStringLiteral("qwen3-tiny"), qwen3));
    hfRepo(t.hub, QStringLiteral("state-spaces/mamba-tiny"),
           {{QStringLiteral("config.json"), "{\"model_type\": \"mamba\", \"hidden_size\": 8}"},
            {QStringLiteral("model.safetensors"), fileBytes(QString::fromUtf8(ATTNVIZ_FIXTURE("/models/gpt2-tiny/model.safetensors")))}});
    hfRepo(t.hub, QStringLiteral("old/pickled-gpt2"),
           {{QStringLiteral("config.json"), fileBytes(QString::fromUtf8(ATTNVIZ_FIXTURE("/models/gpt2-tiny/config.json")))},
            {QStringLiteral("pytorch_model.bin"), QByteArray("PK\x03\x04 not unpickled", 18)}});
    hfRepo(t.hub, QStringLiteral("bartowski/tiny-GGUF"),
           {{QStringLiteral("tiny-Q8_0.gguf"), tinyGguf("tiny", "llama", 7)},
            {QStringLiteral("tiny-Q4_K_M.gguf"), tinyGguf("tiny", "llama", 15)}});
    // real GGUF models (tests/fixtures/gguf): a repository of one .gguf file, and below in Ollama and LM Studio
    const auto ggufFixture = [](const char *name) { return fileBytes(QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/")) + QLatin1String(name)); };
    hfRepo(t.hub, QStringLiteral("someone/qwen3-tiny-GGUF"), {{QStringLiteral("qwen3.gguf"), ggufFixture("qwen3.gguf")}});
    hfRepo(t.hub, QStringLiteral("someone/two-snapshots"), {{QStringLiteral("config.json"), "{}"}}, QString());
    QDir().mkpath(t.hub + QStringLiteral("/models--someone--two-snapshots/snapshots/0000aaaa"));
    // a snapshot whose weights link out of the cache, and one whose config.json is a link loop
    hfRepo(t.hub, QStringLiteral("someone/escape"), fixtureFiles(QStringLiteral("gpt2-tiny"), {QStringLiteral("config.json"), QStringLiteral("vocab.json"), QStringLiteral("merges.txt")}));
    writeBytes(t.elsewhere + QStringLiteral("/model.safetensors"),
               fileBytes(QString::fromUtf8(ATTNVIZ_FIXTURE("/models/gpt2-tiny/model.safetensors"))));
    makeLink(t.elsewhere + QStringLiteral("/model.safetensors"),
             t.hub + QStringLiteral("/models--someone--escape/snapshots/0123456789abcdef0123456789abcdef01234567/model.safetensors"));
    hfRepo(t.hub, QStringLiteral("someone/looped"), fixtureFiles(QStringLiteral("gpt2-tiny"), {QStringLiteral("model.safetensors")}));
    makeLink(QStringLiteral("config.json"),
             t.hub + QStringLiteral("/models--someone--looped/snapshots/0123456789abcdef0123456789abcdef01234567/config.json"));
    writeBytes(t.hub + QStringLiteral("/datasets--someone--texts/refs/main"), "abc"); // not a model
    writeBytes(t.hub + QStringLiteral("/version.txt"), "1");

    // Ollama
    ollamaModel(t.ollama, QStringLiteral("registry.ollama.ai/library/tiny/latest"), tinyGguf("tiny", "llama", 15));
    ollamaModel(t.ollama, QStringLiteral("registry.ollama.ai/library/tiny/q4_K_M"), tinyGguf("tiny", "llama", 15));
    ollamaModel(t.ollama, QStringLiteral("registry.ollama.ai/someone/tiny/q4"), tinyGguf("someone's", "qwen3", 15));
    ollamaModel(t.ollama, QStringLiteral("hf.co/bartowski/tiny-GGUF/Q8_0"), tinyGguf("hf", "llama", 7));
    ollamaModel(t.ollama, QStringLiteral("registry.ollama.ai/library/gone/latest"), tinyGguf("gone"), false);
    ollamaModel(t.ollama, QStringLiteral("registry.ollama.ai/library/notgguf/latest"), QByteArray("PK\x03\x04zipped", 10));
    ollamaModel(t.ollama, QStringLiteral("registry.ollama.ai/library/partial/latest"), tinyGguf("partial"), true, 1000000);
    writeBytes(t.ollama + QStringLiteral("/manifests/registry.ollama.ai/library/broken/latest"), "{\"layers\": [ not json");
    ollamaModel(t.ollama, QStringLiteral("registry.ollama.ai/library/llama-tiny/q8_0"), ggufFixture("llama-q8_0.gguf"));
    ollamaModel(t.ollama, QStringLiteral("registry.ollama.ai/library/qwen3-tiny/latest"), ggufFixture("qwen3.gguf"));

    // LM Studio: PUBLISHER/REPO/FILE.gguf, an MLX folder, a link loop, a link out of the root, and a
    // folder link back up the tree (read once)
    writeBytes(t.lmstudio + QStringLiteral("/lmstudio-community/tiny-GGUF/tiny-Q8_0.gguf"), tinyGguf("tiny", "llama", 7));
    writeBytes(t.lmstudio + QStringLiteral("/lmstudio-community/mamba-GGUF/mamba-Q8_0.gguf"), tinyGguf("mamba", "mamba", 7));
    writeBytes(t.lmstudio + QStringLiteral("/lmstudio-community/llama-tiny-GGUF/llama-tiny-Q4_K_M.gguf"), ggufFixture("llama-q4_k.gguf"));
    writeBytes(t.lmstudio + QStringLiteral("/lmstudio-community/tiny-GGUF/no-tokenizer-F16.gguf"), tinyGguf("tiny", "llama", 1, false));
    makeLink(QStringLiteral("loop.gguf"), t.lmstudio + QStringLiteral("/lmstudio-community/tiny-GGUF/loop.gguf"));
    writeBytes(t.elsewhere + QStringLiteral("/outside.gguf"), gguf);
    makeLink(t.elsewhere + QStringLiteral("/outside.gguf"), t.lmstudio + QStringLiteral("/lmstudio-community/tiny-GGUF/outside.gguf"));
    makeLink(QStringLiteral(".."), t.lmstudio + QStringLiteral("/lmstudio-community/tiny-GGUF/up"));
    for (const auto &[name, bytes] : fixtureFiles(QStringLiteral("llama-tiny"),
                                                  {QStringLiteral("config.json"), QStringLiteral("model.safetensors"),
                                                   QStringLiteral("tokenizer.json"), QStringLiteral("tokenizer_config.json")}))
        writeBytes(t.lmstudio + QStringLiteral("/mlx-community/llama-tiny/") + name, bytes);

    // A folder the user adds: a .gguf file and a model folder
    writeBytes(t.folder + QStringLiteral("/downloads/tiny.gguf"), tinyGguf("tiny", "gemma3", 32));
    for (const auto &[name, bytes] : fixtureFiles(QStringLiteral("gpt2-tiny"), gpt2))
        writeBytes(t.folder + QStringLiteral("/gpt2-tiny/") + name, bytes);
    return t;
}

} // namespace attnviz_test
