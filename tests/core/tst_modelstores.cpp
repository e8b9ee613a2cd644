// SPDX-License-Identifier: GPL-3.0-or-later
// The model stores (modelstores.h) on fake trees built here (support/storetrees.h): what the scan
// lists for the Hugging Face cache, Ollama and LM Studio and an added folder — names, specs, families,
// parameter counts, sizes on disk, precisions, and the reason for every model it cannot compute (a
// broken manifest, a missing blob, a blob that is not GGUF, a short blob, a link loop, links out of
// the root, an unknown model_type, a pickle); the specs hf: and ollama: resolved to what the scan
// shows; the roots the environment gives; Ollama manifests refused field by field; 50 models in
// well under a second; a GGUF file the list offers opens, and one it greys fails to open for the
// reason it shows.
#include "testpaths.h"
#include "attnviz/fileio.h"
#include "attnviz/modelstores.h"
#include "attnviz/pretrained.h"

#include "../support/storetrees.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

#include <map>

using namespace attnviz;
using namespace attnviz_test;

namespace {

std::string s(const QString &q) { return q.toStdString(); }
QString canonical(const QString &p) { return QFileInfo(p).canonicalFilePath(); }

qint64 sizeOf(const QString &p) { return QFileInfo(p).size(); }

qint64 fixtureBytes(const QString &model, const QStringList &files)
{
    qint64 n = 0;
    for (const QString &f : files)
        n += QFileInfo(QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + model + QLatin1Char('/') + f).size();
    return n;
}

std::vector<StoreRoot> treeRoots(const StoreTrees &t)
{
    StoreEnvironment env;
    env.home = s(t.home);
    env.systemOllama = false;
    return modelStoreRoots(env, {s(t.folder)});
}

const LocalModel *find(const StoreScan &scan, const std::string &name)
{
    for (const LocalModel &m : scan.models)
        if (m.name == name)
            return &m;
    return nullptr;
}

// The row of `fileName` when TMP/models is listed as a folder of models (a scratch home, no
// system Ollama); `found` false where the list has none.
LocalModel folderRow(const QTemporaryDir &tmp, const QString &fileName, bool &found)
{
    StoreEnvironment env;
    env.home = s(tmp.path() + QStringLiteral("/home"));
    env.systemOllama = false;
    const StoreScan scan = scanModelStores(modelStoreRoots(env, {s(tmp.path() + QStringLiteral("/models"))}));
    found = false;
    for (const LocalModel &m : scan.models)
        if (QFileInfo(QString::fromStdString(m.path)).fileName() == fileName) {
            found = true;
            return m;
        }
    return {};
}

const QString kRev = QStringLiteral("0123456789abcdef0123456789abcdef01234567");

} // namespace

class TestModelStores : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    StoreTrees m_trees;
    StoreScan m_scan;

private slots:
    void initTestCase()
    {
        QVERIFY(m_tmp.isValid());
        m_trees = buildStoreTrees(m_tmp.path());
        m_scan = scanModelStores(treeRoots(m_trees));
    }

    void roots()
    {
        StoreEnvironment env;
        env.home = "/home/u";
        std::vector<StoreRoot> r = modelStoreRoots(env);
        QCOMPARE(r.size(), size_t(5));
        QCOMPARE(r[0].path, std::string("/home/u/.cache/huggingface/hub"));
        QCOMPARE(r[1].path, std::string("/home/u/.ollama/models"));
        QCOMPARE(r[2].path, std::string("/usr/share/ollama/.ollama/models"));
        QCOMPARE(r[3].path, std::string("/home/u/.lmstudio/models"));
        QCOMPARE(r[4].path, std::string("/home/u/.cache/lm-studio/models"));
        QVERIFY(r[0].store == ModelStore::HuggingFace && r[1].store == ModelStore::Ollama && r[3].store == ModelStore::LmStudio);
        env.xdgCacheHome = "/cache";
        QCOMPARE(modelStoreRoots(env)[0].path, std::string("/cache/huggingface/hub"));
        env.hfHome = "/hf";
        QCOMPARE(modelStoreRoots(env)[0].path, std::string("/hf/hub"));
        env.hfHubCache = "/hub";
        env.ollamaModels = "/models/ollama";
        env.systemOllama = false;
        r = modelStoreRoots(env, {"/mine"});
        QCOMPARE(r.size(), size_t(5));
        QCOMPARE(r[0].path, std::string("/hub"));
        QCOMPARE(r[1].path, std::string("/models/ollama"));
        QCOMPARE(r[4].path, std::string("/mine"));
        QVERIFY(r[4].store == ModelStore::Folder);
    }

    void listsEveryModelOnce()
    {
        std::vector<std::string> names;
        for (const LocalModel &m : m_scan.models)
            names.push_back(m.name);
        const std::vector<std::string> expected = {
            // Hugging Face (datasets-- and version.txt are not models)
            "Qwen/Qwen3-tiny", "bartowski/tiny-GGUF/tiny-Q4_K_M.gguf", "bartowski/tiny-GGUF/tiny-Q8_0.gguf",
            "old/pickled-gpt2", "openai-community/gpt2-tiny", "someone/escape", "someone/looped",
            "someone/qwen3-tiny-GGUF/qwen3.gguf", "someone/two-snapshots", "state-spaces/mamba-tiny",
            // Ollama
            "broken:latest", "gone:latest", "hf.co/bartowski/tiny-GGUF:Q8_0", "llama-tiny:q8_0", "notgguf:latest",
            "partial:latest", "qwen3-tiny:latest", "someone/tiny:q4", "tiny:latest", "tiny:q4_K_M",
            // LM Studio (the folder link "up" leads back to a folder already read: nothing twice)
            "lmstudio-community/llama-tiny-GGUF/llama-tiny-Q4_K_M", "lmstudio-community/mamba-GGUF/mamba-Q8_0", "lmstudio-community/tiny-GGUF/loop",
            "lmstudio-community/tiny-GGUF/no-tokenizer-F16", "lmstudio-community/tiny-GGUF/outside",
            "lmstudio-community/tiny-GGUF/tiny-Q8_0", "mlx-community/llama-tiny",
            // the added folder
            "downloads/tiny", "gpt2-tiny"};
        QCOMPARE(names, expected);
        QVERIFY2(m_scan.problems.empty(), m_scan.problems.empty() ? "" : m_scan.problems.front().c_str());
    }

    void huggingFaceSafetensors()
    {
        const LocalModel *gpt2 = find(m_scan, "openai-community/gpt2-tiny");
        QVERIFY(gpt2);
        QVERIFY2(gpt2->supported, gpt2->reason.c_str());
        QCOMPARE(gpt2->spec, std::string("hf:openai-community/gpt2-tiny"));
        QCOMPARE(QString::fromStdString(gpt2->path),
                 canonical(m_trees.hub + QStringLiteral("/models--openai-community--gpt2-tiny/snapshots/") + kRev));
        QVERIFY(gpt2->store == ModelStore::HuggingFace);
        QCOMPARE(gpt2->root, s(m_trees.hub));
        QCOMPARE(gpt2->format, std::string("safetensors"));
        QCOMPARE(gpt2->family, std::string("gpt2"));
        QCOMPARE(gpt2->parameters, int64_t(812210));
        QCOMPARE(gpt2->precision, std::string("F32"));
        // the blobs the snapshot links to, not the links
        QCOMPARE(qint64(gpt2->bytes), fixtureBytes(QStringLiteral("gpt2-tiny"), {QStringLiteral("config.json"),
                 QStringLiteral("model.safetensors"), QStringLiteral("vocab.json"), QStringLiteral("merges.txt")}));
        QCOMPARE(gpt2->bytes, uint64_t(3251776 + 315 + sizeOf(QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/gpt2/vocab.json"))) +
                                       sizeOf(QString::fromUtf8(ATTNVIZ_FIXTURE("/tokenizers/gpt2/merges.txt")))));

        const LocalModel *qwen = find(m_scan, "Qwen/Qwen3-tiny");
        QVERIFY(qwen && qwen->supported);
        QCOMPARE(qwen->family, std::string("qwen3"));
        QCOMPARE(qwen->parameters, int64_t(1217856));
        QCOMPARE(qwen->precision, std::string("BF16"));
        QCOMPARE(describeParameters(qwen->parameters), std::string("1.22M"));
    }

    void huggingFaceRefusals()
    {
        const LocalModel *mamba = find(m_scan, "state-spaces/mamba-tiny");
        QVERIFY(mamba && !mamba->supported);
        QCOMPARE(mamba->family, std::string("mamba"));
        QVERIFY2(mamba->reason.rfind("config.json: model_type: \"mamba\" is not a family attnviz knows (gpt2, bert", 0) == 0,
                 mamba->reason.c_str());

        const LocalModel *pickle = find(m_scan, "old/pickled-gpt2");
        QVERIFY(pickle && !pickle->supported);
        QCOMPARE(pickle->family, std::string("gpt2"));
        QVERIFY2(pickle->reason.rfind("pytorch_model.bin: a PyTorch pickle, which attnviz never unpickles", 0) == 0,
                 pickle->reason.c_str());
        QCOMPARE(pickle->bytes, uint64_t(315 + 18));

        const LocalModel *escape = find(m_scan, "someone/escape");
        QVERIFY(escape && !escape->supported);
        QCOMPARE(escape->reason, "model.safetensors: a symbolic link out of " + s(m_trees.hub) + " (not followed)");
        QCOMPARE(escape->family, std::string("gpt2")); // config.json is inside
        QCOMPARE(escape->parameters, int64_t(0));      // nothing read through the link

        const LocalModel *loop = find(m_scan, "someone/looped");
        QVERIFY(loop && !loop->supported);
        QCOMPARE(loop->reason, std::string("config.json: a symbolic link loop"));

        const LocalModel *two = find(m_scan, "someone/two-snapshots");
        QVERIFY(two && !two->supported);
        QCOMPARE(two->reason, "no refs/main and 2 snapshots (open one of the folders under " +
                                  s(canonical(m_trees.hub + QStringLiteral("/models--someone--two-snapshots/snapshots"))) + ")");
    }

    void ggufVerdictAgreesWithOpening_data()
    {
        QTest::addColumn<QByteArray>("gguf");
        QTest::addColumn<QString>("reason");
        using Extra = QList<QPair<QByteArray, QByteArray>>;
        QTest::newRow("valid") << tinyGguf("tiny", "llama", 0) << QString();
        QTest::newRow("valid, pre llama-bpe")
            << tinyGguf("tiny", "llama", 0, true, true, "llama-bpe") << QString();
        QTest::newRow("no merges") << tinyGguf("tiny", "llama", 0, true, false)
                                   << QStringLiteral("metadata \"tokenizer.ggml.merges\": missing (a gpt2 tokenizer needs its merges)");
        QTest::newRow("unknown pre-tokenizer")
            << tinyGguf("tiny", "llama", 0, true, true, "tekken")
            << QStringLiteral("metadata \"tokenizer.ggml.pre\": \"tekken\" is not a pre-tokenizer attnviz knows (llama-bpe, "
                              "qwen2, smollm, gpt-2, gpt-4o, default)");
        QTest::newRow("add_bos_token a string")
            << tinyGguf("tiny", "llama", 0, true, true, "default", Extra{{"tokenizer.ggml.add_bos_token", "true"}})
            << QStringLiteral("metadata \"tokenizer.ggml.add_bos_token\": type string, expected bool");
        QTest::newRow("bos id a string")
            << tinyGguf("tiny", "llama", 0, true, true, "default", Extra{{"tokenizer.ggml.bos_token_id", "1"}})
            << QStringLiteral("metadata \"tokenizer.ggml.bos_token_id\": type string, expected uint32 (a token id)");
    }

    // The list's verdict on a GGUF file is what opening it finds: offered, it opens; greyed, opening
    // it fails for the reason the row shows (the tokenizer's keys are checked without its arrays).
    void ggufVerdictAgreesWithOpening()
    {
        QFETCH(QByteArray, gguf);
        QFETCH(QString, reason);
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QString file = tmp.path() + QStringLiteral("/models/tiny.gguf");
        QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/models")));
        writeBytes(file, gguf);
        bool found = false;
        const LocalModel listed = folderRow(tmp, QStringLiteral("tiny.gguf"), found);
        QVERIFY(found);
        std::unique_ptr<Model> model;
        const Status open = openPretrained(listed.path, {}, model);
        if (reason.isEmpty()) {
            QVERIFY2(listed.supported, listed.reason.c_str());
            QVERIFY2(open.ok(), open.message.c_str());
            return;
        }
        QVERIFY(!listed.supported);
        QCOMPARE(QString::fromStdString(listed.reason), reason);
        QVERIFY(!open.ok());
        QVERIFY2(QString::fromStdString(open.message).endsWith(reason), open.message.c_str());
    }

    void folderVerdictAgreesWithOpening_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("modelType"); // replaces tokenizer.json's model.type; empty: as it is
        QTest::addColumn<QString>("damage");    // what else is done to tokenizer.json
        QTest::addColumn<QString>("reason");    // the row's reason starts with it; empty: computable
        QTest::newRow("BPE") << QStringLiteral("qwen3-tiny") << QString() << QString() << QString();
        QTest::newRow("Unigram") << QStringLiteral("qwen3-tiny") << QStringLiteral("Unigram") << QString()
                                 << QStringLiteral("tokenizer.json: model.type: Unigram models are not supported yet (only BPE)");
        QTest::newRow("WordLevel") << QStringLiteral("qwen3-tiny") << QStringLiteral("WordLevel") << QString()
                                   << QStringLiteral("tokenizer.json: model.type: \"WordLevel\" is not supported (only BPE)");
        QTest::newRow("a folder") << QStringLiteral("qwen3-tiny") << QString() << QStringLiteral("folder")
                                  << QStringLiteral("tokenizer.json: is a directory, not a file");
        QTest::newRow("truncated") << QStringLiteral("qwen3-tiny") << QString() << QStringLiteral("truncated")
                                   << QStringLiteral("tokenizer.json: malformed JSON: parse error at line ");
        QTest::newRow("too deep") << QStringLiteral("qwen3-tiny") << QString() << QStringLiteral("deep")
                                  << QStringLiteral("tokenizer.json: zz: nested deeper than 64 levels");
        QTest::newRow("encoder-decoder") << QStringLiteral("t5-tiny") << QString() << QString() << QString(); // opens
    }

    // A folder's row in the list says what opening it would refuse of its tokenizer.json (the file
    // checked, its model.type read; no tokenizer built), and greys what the window cannot show.
    void folderVerdictAgreesWithOpening()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, modelType);
        QFETCH(QString, damage);
        QFETCH(QString, reason);
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QString dir = tmp.path() + QStringLiteral("/models/") + fixture;
        QVERIFY(QDir().mkpath(dir));
        const QDir from(QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + fixture);
        for (const QString &f : from.entryList(QDir::Files)) {
            QFile in(from.filePath(f));
            QVERIFY(in.open(QIODevice::ReadOnly));
            QByteArray bytes = in.readAll();
            if (f == QLatin1String("tokenizer.json")) {
                if (!modelType.isEmpty()) {
                    const QByteArray bpe = "\"model\": {\n    \"type\": \"BPE\"";
                    QVERIFY(bytes.contains(bpe));
                    bytes.replace(bpe, "\"model\": {\n    \"type\": \"" + modelType.toUtf8() + '"');
                }
                if (damage == QLatin1String("folder")) {
                    QVERIFY(QDir().mkpath(dir + QLatin1Char('/') + f));
                    continue;
                }
                if (damage == QLatin1String("truncated"))
                    bytes.truncate(3000); // inside added_tokens, before model.type
                if (damage == QLatin1String("deep")) // a first key, before the model
                    bytes = "{\"zz\": " + QByteArray(300, '[') + QByteArray(300, ']') + "," + bytes.mid(1);
            }
            writeBytes(dir + QLatin1Char('/') + f, bytes);
        }
        bool found = false;
        const LocalModel listed = folderRow(tmp, fixture, found);
        QVERIFY(found);
        std::unique_ptr<Model> model;
        const Status open = openPretrained(listed.path, {}, model);
        if (reason.isEmpty()) {
            QVERIFY2(listed.supported, listed.reason.c_str());
            QVERIFY2(open.ok(), open.message.c_str());
            return;
        }
        QVERIFY(!listed.supported);
        QVERIFY2(QString::fromStdString(listed.reason).startsWith(reason), listed.reason.c_str());
        if (!modelType.isEmpty() || !damage.isEmpty()) { // opening refuses it, saying the same
            QVERIFY(!open.ok());
            const QString tail = QString::fromStdString(listed.reason).mid(int(qstrlen("tokenizer.json: ")));
            QVERIFY2(QString::fromStdString(open.message).endsWith(tail), open.message.c_str());
        }
    }

    void ggufFiles()
    {
        for (const char *name : {"bartowski/tiny-GGUF/tiny-Q8_0.gguf", "lmstudio-community/tiny-GGUF/tiny-Q8_0", "downloads/tiny"}) {
            const LocalModel *m = find(m_scan, name);
            QVERIFY2(m, name);
            QCOMPARE(m->format, std::string("gguf"));
            QCOMPARE(qint64(m->bytes), m_trees.ggufBytes);
        }
        // what the GGUF header says (ggufSummary): architecture, parameters, quantization, computable or why not
        const auto facts = [&](const char *name) {
            const LocalModel *m = find(m_scan, name);
            return QString::fromStdString(m ? m->family + " " + std::to_string(m->parameters) + " " + m->precision + " " +
                                                  (m->supported ? std::string("ok") : m->reason)
                                            : std::string("missing"));
        };
        QCOMPARE(facts("bartowski/tiny-GGUF/tiny-Q8_0.gguf"), QStringLiteral("llama 792 Q8_0 ok"));
        QCOMPARE(facts("bartowski/tiny-GGUF/tiny-Q4_K_M.gguf"), QStringLiteral("llama 792 Q4_K_M ok"));
        QCOMPARE(facts("lmstudio-community/tiny-GGUF/tiny-Q8_0"), QStringLiteral("llama 792 Q8_0 ok"));
        QCOMPARE(facts("downloads/tiny"), QStringLiteral("gemma3 792 BF16 ok"));
        QCOMPARE(facts("tiny:latest"), QStringLiteral("llama 792 Q4_K_M ok"));
        QCOMPARE(facts("someone/tiny:q4"), QStringLiteral("qwen3 792 Q4_K_M ok"));
        QCOMPARE(facts("lmstudio-community/mamba-GGUF/mamba-Q8_0"),
                 QStringLiteral("mamba 792 Q8_0 architecture \"mamba\" is not one attnviz computes (llama, qwen2, qwen3, gemma2, "
                             "gemma3, phi3, gpt2, t5, t5encoder)"));
        QCOMPARE(facts("lmstudio-community/tiny-GGUF/no-tokenizer-F16"),
                 QStringLiteral("llama 792 F16 metadata \"tokenizer.ggml.model\" is missing (no tokenizer in the file)"));
        // the real GGUF fixtures, in each store
        QCOMPARE(facts("llama-tiny:q8_0"), QStringLiteral("llama 57504 Q8_0 ok"));
        QCOMPARE(facts("qwen3-tiny:latest"), QStringLiteral("qwen3 10560 BF16 ok"));
        QCOMPARE(facts("lmstudio-community/llama-tiny-GGUF/llama-tiny-Q4_K_M"), QStringLiteral("llama 1705216 Q4_K_M ok"));
        QCOMPARE(facts("someone/qwen3-tiny-GGUF/qwen3.gguf"), QStringLiteral("qwen3 10560 BF16 ok"));
        const LocalModel *hf = find(m_scan, "bartowski/tiny-GGUF/tiny-Q8_0.gguf");
        QCOMPARE(hf->spec, std::string("hf:bartowski/tiny-GGUF/tiny-Q8_0.gguf"));
        const LocalModel *lm = find(m_scan, "lmstudio-community/tiny-GGUF/tiny-Q8_0");
        QVERIFY(lm->store == ModelStore::LmStudio);
        QCOMPARE(QString::fromStdString(lm->path), canonical(m_trees.lmstudio + QStringLiteral("/lmstudio-community/tiny-GGUF/tiny-Q8_0.gguf")));
        QCOMPARE(lm->spec, lm->path);
        const LocalModel *mine = find(m_scan, "downloads/tiny");
        QVERIFY(mine->store == ModelStore::Folder);
        QCOMPARE(mine->root, s(m_trees.folder));
    }

    void lmStudioAndFolders()
    {
        const LocalModel *mlx = find(m_scan, "mlx-community/llama-tiny");
        QVERIFY(mlx && mlx->supported);
        QCOMPARE(mlx->family, std::string("llama"));
        QCOMPARE(mlx->parameters, int64_t(1632992));
        QCOMPARE(mlx->precision, std::string("BF16"));

        const LocalModel *loop = find(m_scan, "lmstudio-community/tiny-GGUF/loop");
        QVERIFY(loop && !loop->supported);
        QCOMPARE(loop->reason, std::string("a symbolic link loop"));
        const LocalModel *outside = find(m_scan, "lmstudio-community/tiny-GGUF/outside");
        QVERIFY(outside && !outside->supported);
        QCOMPARE(outside->reason, "a symbolic link out of " + s(m_trees.lmstudio) + " (not followed)");
        QCOMPARE(outside->bytes, uint64_t(0));

        const LocalModel *folder = find(m_scan, "gpt2-tiny");
        QVERIFY(folder && folder->supported);
        QCOMPARE(folder->spec, s(canonical(m_trees.folder + QStringLiteral("/gpt2-tiny"))));
        QCOMPARE(folder->parameters, int64_t(812210));
    }

    void ollama()
    {
        const qint64 extra = QByteArray("{{ .Prompt }}").size() + QByteArray("{\"stop\":[\"<|end|>\"]}").size();
        const LocalModel *tiny = find(m_scan, "tiny:latest");
        QVERIFY(tiny);
        QCOMPARE(tiny->spec, std::string("ollama:tiny:latest"));
        QCOMPARE(tiny->format, std::string("gguf"));
        QCOMPARE(QString::fromStdString(tiny->path),
                 canonical(m_trees.ollama + QStringLiteral("/blobs/sha256-") + sha256Hex(tinyGguf("tiny", "llama", 15))));
        QCOMPARE(qint64(tiny->bytes), m_trees.ggufBytes + extra); // every layer's blob
        QCOMPARE(find(m_scan, "tiny:q4_K_M")->path, tiny->path);  // one blob, two tags
        QCOMPARE(find(m_scan, "someone/tiny:q4")->spec, std::string("ollama:someone/tiny:q4"));
        QCOMPARE(find(m_scan, "hf.co/bartowski/tiny-GGUF:Q8_0")->spec, std::string("ollama:hf.co/bartowski/tiny-GGUF:Q8_0"));

        const LocalModel *broken = find(m_scan, "broken:latest");
        QVERIFY(broken && !broken->supported);
        QVERIFY2(broken->reason.rfind("manifests/registry.ollama.ai/library/broken/latest: malformed JSON: parse error at line 1", 0) == 0,
                 broken->reason.c_str());

        const QString goneHash = sha256Hex(tinyGguf("gone"));
        const LocalModel *gone = find(m_scan, "gone:latest");
        QVERIFY(gone && !gone->supported);
        QCOMPARE(gone->reason, "blobs/sha256-" + s(goneHash) +
                                   ": missing (the model layer of manifests/registry.ollama.ai/library/gone/latest)");
        QCOMPARE(qint64(gone->bytes), extra);

        const LocalModel *notGguf = find(m_scan, "notgguf:latest");
        QVERIFY(notGguf && !notGguf->supported);
        QCOMPARE(notGguf->reason, std::string("not a GGUF file (it does not begin with \"GGUF\")"));
        QCOMPARE(qint64(notGguf->bytes), 10 + extra);

        const LocalModel *partial = find(m_scan, "partial:latest");
        QVERIFY(partial && !partial->supported);
        QCOMPARE(partial->reason, "blobs/sha256-" + s(sha256Hex(tinyGguf("partial"))) + ": " +
                                      describeBytes(uint64_t(tinyGguf("partial").size())) +
                                      " on disk, the manifest says 1.0 MB (an unfinished download?)");
    }

    void specs()
    {
        const std::vector<StoreRoot> roots = treeRoots(m_trees);
        std::string path;
        QVERIFY(resolveModelSpec("hf:openai-community/gpt2-tiny", roots, path).ok());
        QCOMPARE(path, find(m_scan, "openai-community/gpt2-tiny")->path);
        QVERIFY(resolveModelSpec("hf:bartowski/tiny-GGUF/tiny-Q8_0.gguf", roots, path).ok());
        QCOMPARE(path, find(m_scan, "bartowski/tiny-GGUF/tiny-Q8_0.gguf")->path);
        QVERIFY(resolveModelSpec("hf:someone/qwen3-tiny-GGUF", roots, path).ok()); // its one .gguf file
        QCOMPARE(path, find(m_scan, "someone/qwen3-tiny-GGUF/qwen3.gguf")->path);
        QVERIFY(resolveModelSpec("ollama:tiny", roots, path).ok()); // tag "latest"
        QCOMPARE(path, find(m_scan, "tiny:latest")->path);
        QVERIFY(resolveModelSpec("ollama:someone/tiny:q4", roots, path).ok());
        QCOMPARE(path, find(m_scan, "someone/tiny:q4")->path);
        QVERIFY(resolveModelSpec("ollama:hf.co/bartowski/tiny-GGUF:Q8_0", roots, path).ok());
        QCOMPARE(path, find(m_scan, "hf.co/bartowski/tiny-GGUF:Q8_0")->path);
        // every listed spec opens what the list shows
        for (const LocalModel &m : m_scan.models)
            if (m.supported && !m.spec.empty()) {
                QVERIFY2(resolveModelSpec(m.spec, roots, path).ok(), m.spec.c_str());
                QCOMPARE(path, m.path);
            }
        QVERIFY(resolveModelSpec("/some/folder", roots, path).ok());
        QCOMPARE(path, std::string("/some/folder"));
        QVERIFY(!isModelSpec("/some/folder") && isModelSpec("hf:a/b") && isModelSpec("ollama:x"));

        const auto refused = [&](const std::string &spec) {
            path = "untouched";
            const Status st = resolveModelSpec(spec, roots, path);
            [&] { QCOMPARE(path, std::string("untouched")); }();
            return st.ok() ? std::string("(resolved)") : st.message;
        };
        QCOMPARE(refused("hf:nobody/nothing"),
                 "\"hf:nobody/nothing\": not in the Hugging Face cache (looked for " + s(m_trees.hub) + "/models--nobody--nothing)");
        QCOMPARE(refused("hf:bartowski/tiny-GGUF"),
                 std::string("\"hf:bartowski/tiny-GGUF\": 2 .gguf files; name one: hf:bartowski/tiny-GGUF/tiny-Q4_K_M.gguf, "
                             "hf:bartowski/tiny-GGUF/tiny-Q8_0.gguf"));
        QCOMPARE(refused("ollama:qwen3:4b"),
                 "\"ollama:qwen3:4b\": no such model in Ollama's store (looked for " + s(m_trees.ollama) +
                     "/manifests/registry.ollama.ai/library/qwen3/4b)");
        QCOMPARE(refused("ollama:gone"), s(m_trees.ollama) + "/blobs/sha256-" + s(sha256Hex(tinyGguf("gone"))) +
                                             ": missing (the model layer " + s(m_trees.ollama) +
                                             "/manifests/registry.ollama.ai/library/gone/latest names)");
        QVERIFY(refused("ollama:broken").rfind(s(m_trees.ollama) + "/manifests/registry.ollama.ai/library/broken/latest: malformed JSON", 0) == 0);
        QCOMPARE(refused("ollama:../../../etc/passwd"),
                 std::string("\"ollama:../../../etc/passwd\": not an Ollama model name (ollama:NAME, ollama:NAME:TAG, "
                             "ollama:NAMESPACE/NAME:TAG)"));
        QCOMPARE(refused("ollama:"), std::string("\"ollama:\": not an Ollama model name (ollama:NAME, ollama:NAME:TAG, "
                                                 "ollama:NAMESPACE/NAME:TAG)"));
        QCOMPARE(refused("hf:../../etc"),
                 std::string("\"hf:../../etc\": not a Hugging Face repository (hf:ORG/NAME or hf:ORG/NAME/FILE.gguf)"));
        const std::string snap = s(canonical(m_trees.hub + QStringLiteral("/models--someone--escape/snapshots/") + kRev));
        QCOMPARE(refused("hf:someone/escape"), snap + "/model.safetensors: a symbolic link out of " + s(m_trees.hub) + " (not followed)");
        const std::string looped = s(canonical(m_trees.hub + QStringLiteral("/models--someone--looped/snapshots/") + kRev));
        QCOMPARE(refused("hf:someone/looped"), looped + "/config.json: a symbolic link loop");
        StoreEnvironment none;
        none.systemOllama = false;
        path.clear();
        const Status st = resolveModelSpec("ollama:tiny", modelStoreRoots(none), path);
        QCOMPARE(st.message, std::string("\"ollama:tiny\": no such model in Ollama's store (looked nowhere: no root of this "
                                         "store is set; see HF_HUB_CACHE, HF_HOME, OLLAMA_MODELS and HOME)"));
    }

    void manifests_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("message");
        const QByteArray digest = "sha256:" + QByteArray(64, 'a');
        QTest::newRow("not an object") << QByteArray("[1]") << "M: not a JSON object (an Ollama manifest is one)";
        QTest::newRow("no layers") << QByteArray("{}") << "M: layers: missing";
        QTest::newRow("layers not array") << QByteArray("{\"layers\":3}") << "M: layers: not an array";
        QTest::newRow("layer not object") << QByteArray("{\"layers\":[3]}") << "M: layers[0]: not an object";
        QTest::newRow("no mediaType") << QByteArray("{\"layers\":[{\"digest\":\"" + digest + "\"}]}") << "M: layers[0].mediaType: missing";
        QTest::newRow("digest number") << QByteArray("{\"layers\":[{\"mediaType\":\"x\",\"digest\":5}]}")
                                       << "M: layers[0].digest: not a string";
        QTest::newRow("digest path") << QByteArray("{\"layers\":[{\"mediaType\":\"x\",\"digest\":\"sha256:../../etc/passwd\"}]}")
                                     << "M: layers[0].digest: \"sha256:../../etc/passwd\" is not sha256: and 64 hex digits";
        QTest::newRow("digest upper") << QByteArray("{\"layers\":[{\"mediaType\":\"x\",\"digest\":\"sha256:" + QByteArray(64, 'A') + "\"}]}")
                                      << "M: layers[0].digest: \"sha256:" + QString(64, QLatin1Char('A')) + "\" is not sha256: and 64 hex digits";
        QTest::newRow("size negative") << QByteArray("{\"layers\":[{\"mediaType\":\"x\",\"digest\":\"" + digest + "\",\"size\":-1}]}")
                                       << "M: layers[0].size: not a count of bytes";
        QTest::newRow("size string") << QByteArray("{\"layers\":[{\"mediaType\":\"x\",\"digest\":\"" + digest + "\",\"size\":\"1\"}]}")
                                     << "M: layers[0].size: not a number";
        QTest::newRow("no model layer") << QByteArray("{\"layers\":[{\"mediaType\":\"application/vnd.ollama.image.template\",\"digest\":\"" + digest + "\"}]}")
                                        << "M: layers: no layer of media type application/vnd.ollama.image.model";
        QTest::newRow("duplicate key") << QByteArray("{\"layers\":[],\"layers\":[]}") << "M: layers: duplicate key (a field may be given once)";
        QTest::newRow("deep") << QByteArray(40, '[') << "M: (top level): nested deeper than 16 levels";
    }

    void manifests()
    {
        QFETCH(QByteArray, text);
        QFETCH(QString, message);
        OllamaManifest m;
        m.model = 42;
        const Status st = parseOllamaManifest(text.toStdString(), "M", m);
        QVERIFY(!st.ok());
        QVERIFY2(st.message.rfind(s(message), 0) == 0, st.message.c_str());
        QCOMPARE(m.model, 42); // untouched
    }

    void manifestRead()
    {
        const std::string digest = "sha256:" + std::string(64, 'b');
        OllamaManifest m;
        QVERIFY(parseOllamaManifest("{\"layers\":[{\"mediaType\":\"application/vnd.ollama.image.template\",\"digest\":\"" + digest +
                                        "\",\"size\":3},{\"mediaType\":\"application/vnd.ollama.image.model\",\"digest\":\"" +
                                        digest + "\",\"size\":12345678901}]}",
                                    "M", m)
                    .ok());
        QCOMPARE(m.layers.size(), size_t(2));
        QCOMPARE(m.model, 1);
        QCOMPARE(m.layers[1].size, uint64_t(12345678901ull));
        QCOMPARE(ollamaBlobName(m.layers[1].digest), "sha256-" + std::string(64, 'b'));
    }

    void cacheNames()
    {
        QCOMPARE(hfCacheRepo("/h/hub/models--Qwen--Qwen3-0.6B/snapshots/abc123"), std::string("Qwen/Qwen3-0.6B"));
        QCOMPARE(hfCacheRepo("/h/hub/models--gpt2/snapshots/abc123/"), std::string("gpt2"));
        QCOMPARE(hfCacheRepo("/h/models/Qwen3-0.6B"), std::string());
        QCOMPARE(hfCacheRepo("/h/hub/models--/snapshots/abc"), std::string());
        QCOMPARE(hfCacheRepo("/h/hub/datasets--a--b/snapshots/abc"), std::string());
        QCOMPARE(hfCacheRepo(""), std::string());
    }

    void parameters()
    {
        QCOMPARE(describeParameters(0), std::string());
        QCOMPARE(describeParameters(812210), std::string("812K"));
        QCOMPARE(describeParameters(135000000), std::string("135M"));
        QCOMPARE(describeParameters(596049920), std::string("596M"));
        QCOMPARE(describeParameters(1235814400), std::string("1.24B"));
        QCOMPARE(describeParameters(2000000000), std::string("2B"));
        QCOMPARE(describeParameters(15500000), std::string("15.5M"));
        QCOMPARE(describeParameters(999), std::string("999"));
    }

    // refs/main a folder (or snapshots/ a file): the message says what was found, not "refs/main: ".
    void refsMainNotAFile()
    {
        QTemporaryDir tmp;
        const QString hub = tmp.path() + QStringLiteral("/hub");
        hfRepo(hub, QStringLiteral("org/model"),
               fixtureFiles(QStringLiteral("qwen3-tiny"), {QStringLiteral("config.json")}));
        const QString refs = hub + QStringLiteral("/models--org--model/refs/main");
        QVERIFY(QFile::remove(refs));
        QVERIFY(QDir().mkpath(refs));
        const std::vector<StoreRoot> roots = {{ModelStore::HuggingFace, s(hub)}};
        std::string path;
        Status st = resolveModelSpec("hf:org/model", roots, path);
        QVERIFY(!st.ok());
        QCOMPARE(st.message, "\"hf:org/model\": " + s(hub) + "/models--org--model: refs/main: a folder, not a file");
        QVERIFY(QDir(refs).removeRecursively());
        const QString snapshots = hub + QStringLiteral("/models--org--model/snapshots");
        QVERIFY(QDir(snapshots).removeRecursively());
        QVERIFY(writeBytes(snapshots, "x"));
        st = resolveModelSpec("hf:org/model", roots, path);
        QCOMPARE(st.message, "\"hf:org/model\": " + s(hub) + "/models--org--model: snapshots/: a file, not a folder");
    }

    // A GGUF whose metadata is 72 MB of empty strings (a sparse file), and 40 repositories whose
    // config.json links to one 2 MB blob: the list reads each only up to its budget and says what
    // it did not read, in the row.
    void oversizedHeadersSkipped()
    {
        QTemporaryDir tmp;
        const QString hub = tmp.path() + QStringLiteral("/hub"), lm = tmp.path() + QStringLiteral("/lm");
        QByteArray b("GGUF");
        const auto u32 = [&](quint32 v) { b.append(reinterpret_cast<const char *>(&v), 4); };
        const auto u64 = [&](quint64 v) { b.append(reinterpret_cast<const char *>(&v), 8); };
        const auto str = [&](const QByteArray &t) {
            u64(quint64(t.size()));
            b.append(t);
        };
        u32(3);
        u64(0);
        u64(2);
        str("general.architecture");
        u32(8);
        str("llama");
        str("x.strings");
        u32(9);
        u32(8);
        const quint64 n = 9000000; // each string: a zero length
        u64(n);
        const QString gguf = lm + QStringLiteral("/pub/big-GGUF/big.gguf");
        QVERIFY(writeBytes(gguf, b));
        QVERIFY(QFile::resize(gguf, (b.size() + qint64(n) * 8 + 31) / 32 * 32));

        const QByteArray config = "{\"model_type\":\"llama\",\"pad\":\"" + QByteArray(2 << 20, 'x') + "\"}";
        QVERIFY(writeBytes(tmp.path() + QStringLiteral("/src/config.json"), config));
        for (int i = 0; i < 40; ++i) {
            const QString dir = hub + QStringLiteral("/models--org--big-%1").arg(i);
            QDir().mkpath(dir + QStringLiteral("/blobs"));
            QVERIFY(::link(qPrintable(tmp.path() + QStringLiteral("/src/config.json")),
                           qPrintable(dir + QStringLiteral("/blobs/config"))) == 0);
            QVERIFY(makeLink(QStringLiteral("../../blobs/config"),
                             dir + QStringLiteral("/snapshots/") + kRev + QStringLiteral("/config.json")));
            QVERIFY(writeBytes(dir + QStringLiteral("/refs/main"), kRev.toLatin1()));
        }
        const StoreScan scan =
            scanModelStores({{ModelStore::HuggingFace, s(hub)}, {ModelStore::LmStudio, s(lm)}});
        QCOMPARE(scan.models.size(), size_t(41));
        const LocalModel *big = find(scan, "pub/big-GGUF/big");
        QVERIFY(big && !big->supported);
        QVERIFY2(big->reason.find("metadata \"x.strings\": the header runs past the first 67.1 MB of the file") == 0,
                 big->reason.c_str());
        for (const LocalModel &m : scan.models) {
            if (m.format != "safetensors")
                continue;
            QVERIFY(!m.supported);
            QCOMPARE(m.reason, std::string("config.json: 2.1 MB, more than the 1.0 MB a list reads of one (not read)"));
        }
    }

    // 50 models (20 Hugging Face repositories, 15 Ollama tags, 15 LM Studio files) in well under a second.
    void fiftyModelsFast()
    {
        QTemporaryDir tmp;
        const QString hub = tmp.path() + QStringLiteral("/hub"), ollama = tmp.path() + QStringLiteral("/ollama"),
                      lm = tmp.path() + QStringLiteral("/lm");
        const auto files = fixtureFiles(QStringLiteral("qwen3-tiny"), {QStringLiteral("config.json"), QStringLiteral("model.safetensors"),
                                                                        QStringLiteral("tokenizer.json"), QStringLiteral("tokenizer_config.json")});
        // one copy of the weights; each repository's blobs are hard links to it
        for (const auto &[name, bytes] : files)
            QVERIFY(writeBytes(tmp.path() + QStringLiteral("/src/") + name, bytes));
        for (int i = 0; i < 20; ++i) {
            const QString dir = hub + QStringLiteral("/models--org--model-%1").arg(i);
            for (const auto &[name, bytes] : files) {
                QDir().mkpath(dir + QStringLiteral("/blobs"));
                QVERIFY(::link(qPrintable(tmp.path() + QStringLiteral("/src/") + name), qPrintable(dir + QStringLiteral("/blobs/") + name)) == 0);
                QVERIFY(makeLink(QStringLiteral("../../blobs/") + name, dir + QStringLiteral("/snapshots/") + kRev + QLatin1Char('/') + name));
            }
            QVERIFY(writeBytes(dir + QStringLiteral("/refs/main"), kRev.toLatin1()));
        }
        const QByteArray gguf = tinyGguf("tiny", "llama", 15);
        for (int i = 0; i < 15; ++i) {
            ollamaModel(ollama, QStringLiteral("registry.ollama.ai/library/m%1/latest").arg(i), gguf);
            QVERIFY(writeBytes(lm + QStringLiteral("/pub/repo-%1/model-Q4_K_M.gguf").arg(i), gguf));
        }
        const std::vector<StoreRoot> roots = {{ModelStore::HuggingFace, s(hub)}, {ModelStore::Ollama, s(ollama)}, {ModelStore::LmStudio, s(lm)}};
        QElapsedTimer timer;
        timer.start();
        const StoreScan scan = scanModelStores(roots);
        const qint64 ms = timer.elapsed();
        QCOMPARE(scan.models.size(), size_t(50));
        int supported = 0;
        for (const LocalModel &m : scan.models)
            supported += m.supported;
        QCOMPARE(supported, 50);
        qInfo("50 models scanned in %lld ms", ms);
        QVERIFY2(ms < 1000, qPrintable(QStringLiteral("%1 ms").arg(ms)));
    }
};

QTEST_GUILESS_MAIN(TestModelStores)
#include "tst_modelstores.moc"
