// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz model list` and the hf: / ollama: specs as a user runs them, on the fake stores of
// support/storetrees.h under a HOME of the test's own: the table and the JSON read back (names,
// specs, parameters, sizes, reasons), --folder, --add-folder / --remove-folder kept in the settings,
// `model info` and `tokenize --model` through hf:ORG/NAME giving what the folder gives, and the
// specs that name nothing: one line saying where attnviz looked, exit code 2; a greyed GGUF file's
// reason is what `model info` on it says.
#include "testpaths.h"
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "../support/runattnviz.h"
#include "../support/storetrees.h"

using namespace attnviz_test;

namespace {

QProcessEnvironment storeEnvironment(const StoreTrees &t)
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char *v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "OLLAMA_MODELS"})
        env.remove(QString::fromLatin1(v));
    for (const QString &kv : t.environment())
        env.insert(kv.section(QLatin1Char('='), 0, 0), kv.section(QLatin1Char('='), 1));
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    return env;
}

Run attnvizIn(const QProcessEnvironment &env, const QStringList &args)
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(QString::fromUtf8(ATTNVIZ_BINARY), args);
    return finished(p, 120000);
}

QJsonObject modelNamed(const QJsonArray &models, const QString &name)
{
    for (const QJsonValue &v : models)
        if (v.toObject().value(QStringLiteral("name")).toString() == name)
            return v.toObject();
    return {};
}

// Rows of the stores under the test's folder only (a machine's /usr/share/ollama is not the test's).
QJsonArray ownModels(const QJsonArray &models, const QString &base)
{
    QJsonArray own;
    for (const QJsonValue &v : models)
        if (v.toObject().value(QStringLiteral("root")).toString().startsWith(base))
            own.append(v);
    return own;
}

} // namespace

class TestModelStoresCli : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    StoreTrees m_trees;
    QProcessEnvironment m_env;

private slots:
    void initTestCase()
    {
        QVERIFY(m_tmp.isValid());
        m_trees = buildStoreTrees(m_tmp.path());
        m_env = storeEnvironment(m_trees);
    }

    void listJson()
    {
        const Run r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--json"),
                                        QStringLiteral("--folder"), m_trees.folder});
        QCOMPARE(r.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        const QJsonArray models = ownModels(o.value(QStringLiteral("models")).toArray(), m_tmp.path());
        QCOMPARE(models.size(), 29);
        const QJsonObject gpt2 = modelNamed(models, QStringLiteral("openai-community/gpt2-tiny"));
        QCOMPARE(gpt2.value(QStringLiteral("spec")).toString(), QStringLiteral("hf:openai-community/gpt2-tiny"));
        QCOMPARE(gpt2.value(QStringLiteral("store")).toString(), QStringLiteral("Hugging Face"));
        QCOMPARE(gpt2.value(QStringLiteral("family")).toString(), QStringLiteral("gpt2"));
        QCOMPARE(gpt2.value(QStringLiteral("parameters")).toInteger(), 812210);
        QCOMPARE(gpt2.value(QStringLiteral("precision")).toString(), QStringLiteral("F32"));
        QCOMPARE(gpt2.value(QStringLiteral("format")).toString(), QStringLiteral("safetensors"));
        QVERIFY(gpt2.value(QStringLiteral("supported")).toBool());
        const QJsonObject tiny = modelNamed(models, QStringLiteral("tiny:latest"));
        QCOMPARE(tiny.value(QStringLiteral("spec")).toString(), QStringLiteral("ollama:tiny:latest"));
        QCOMPARE(tiny.value(QStringLiteral("precision")).toString(), QStringLiteral("Q4_K_M"));
        QCOMPARE(tiny.value(QStringLiteral("bytes")).toInteger(), m_trees.ggufBytes + 13 + 20);
        // the model run counts the same parameters (Llama 3's rope_freqs table is not one)
        QCOMPARE(modelNamed(models, QStringLiteral("llama-tiny:q8_0")).value(QStringLiteral("parameters")).toInteger(), 57504);
        const QJsonObject gone = modelNamed(models, QStringLiteral("gone:latest"));
        QVERIFY(!gone.value(QStringLiteral("supported")).toBool());
        QVERIFY2(gone.value(QStringLiteral("reason")).toString().endsWith(
                     QStringLiteral(": missing (the model layer of manifests/registry.ollama.ai/library/gone/latest)")),
                 qPrintable(gone.value(QStringLiteral("reason")).toString()));
        QCOMPARE(modelNamed(models, QStringLiteral("gpt2-tiny")).value(QStringLiteral("store")).toString(), QStringLiteral("folder"));
        // the roots searched, in order, with HOME the test's
        const QJsonArray roots = o.value(QStringLiteral("roots")).toArray();
        QCOMPARE(roots.at(0).toObject().value(QStringLiteral("path")).toString(), m_trees.hub);
        QCOMPARE(roots.at(1).toObject().value(QStringLiteral("path")).toString(), m_trees.ollama);
        QVERIFY(roots.at(1).toObject().value(QStringLiteral("exists")).toBool());
    }

    void listTable()
    {
        const Run r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list")});
        QCOMPARE(r.code, 0);
        const QStringList lines = QString::fromUtf8(r.out).split(QLatin1Char('\n'));
        QVERIFY2(lines.value(0).startsWith(QStringLiteral("MODEL")), qPrintable(lines.value(0)));
        QVERIFY(lines.value(0).contains(QStringLiteral("FAMILY")) && lines.value(0).contains(QStringLiteral("PRECISION")));
        // one row, columns split on runs of spaces
        const auto row = [&](const QString &model) {
            for (const QString &l : lines)
                if (l.startsWith(model + QLatin1Char(' ')))
                    return l.split(QRegularExpression(QStringLiteral("\\s{2,}")));
            return QStringList();
        };
        QCOMPARE(row(QStringLiteral("hf:openai-community/gpt2-tiny")).mid(0, 5),
                 (QStringList{QStringLiteral("hf:openai-community/gpt2-tiny"), QStringLiteral("gpt2"), QStringLiteral("812K"),
                              QStringLiteral("4.8 MB"), QStringLiteral("F32")}));
        QCOMPARE(row(QStringLiteral("ollama:someone/tiny:q4")).mid(1, 2), (QStringList{QStringLiteral("qwen3"), QStringLiteral("792")}));
        // greyed rows say why on the line below
        QVERIFY2(QString::fromUtf8(r.out).contains(QStringLiteral("\n    cannot compute: config.json: model_type: \"mamba\" is not a family attnviz knows")),
                 r.out.constData());
        QVERIFY(QString::fromUtf8(r.out).contains(QStringLiteral("\n    cannot compute: a symbolic link loop\n")));
        // the added folder is not scanned unless added
        QVERIFY(!r.out.contains("downloads/tiny"));
    }

    void addAndRemoveFolder()
    {
        Run r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--add-folder"), m_trees.folder});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.contains("added " + m_trees.folder.toUtf8()), r.err.constData());
        r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--json")});
        QJsonArray models = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("models")).toArray();
        QCOMPARE(modelNamed(models, QStringLiteral("downloads/tiny")).value(QStringLiteral("family")).toString(), QStringLiteral("gemma3"));
        r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--remove-folder"), m_trees.folder});
        QCOMPARE(r.code, 0);
        r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--json")});
        models = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("models")).toArray();
        QVERIFY(modelNamed(models, QStringLiteral("downloads/tiny")).isEmpty());
        r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--remove-folder"), m_trees.folder});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.startsWith("attnviz model list: " + m_trees.folder.toUtf8() + ": not one of the added folders"), r.err.constData());
        // A folder to remove that is not added: refused before the folder to add is written.
        r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--add-folder"),
                              m_trees.folder, QStringLiteral("--remove-folder"), m_tmp.path()});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.startsWith("attnviz model list: " + m_tmp.path().toUtf8() + ": not one of the added folders"),
                 r.err.constData());
        QVERIFY2(r.err.endsWith("nothing changed\n") && r.err.count('\n') == 1, r.err.constData());
        r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--json")});
        models = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("models")).toArray();
        QVERIFY(modelNamed(models, QStringLiteral("downloads/tiny")).isEmpty());
        r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--folder"), m_tmp.path() + QStringLiteral("/none")});
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, "attnviz model list: " + m_tmp.path().toUtf8() + "/none: not a folder\n");
    }

    // A GGUF file the list greys says why on the line below its row (and in the JSON), and `model
    // info` on it fails for that reason: the list never offers what does not open.
    void greyedGgufSaysWhy()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QVERIFY(writeBytes(dir.path() + QStringLiteral("/tekken.gguf"), tinyGguf("tekken", "llama", 7, true, true, "tekken")));
        QVERIFY(writeBytes(dir.path() + QStringLiteral("/fine.gguf"), tinyGguf("fine", "llama", 7)));
        const QString why = QStringLiteral("metadata \"tokenizer.ggml.pre\": \"tekken\" is not a pre-tokenizer attnviz knows");
        Run r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--folder"), dir.path()});
        QCOMPARE(r.code, 0);
        const QString out = QString::fromUtf8(r.out);
        const int row = out.indexOf(dir.path() + QStringLiteral("/tekken.gguf"));
        QVERIFY2(row >= 0, r.out.constData());
        const int next = out.indexOf(QLatin1Char('\n'), row);
        QVERIFY2(out.mid(next + 1).startsWith(QStringLiteral("    cannot compute: ") + why), r.out.constData());
        r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("list"), QStringLiteral("--json"), QStringLiteral("--folder"),
                              dir.path()});
        QCOMPARE(r.code, 0);
        const QJsonArray models = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("models")).toArray();
        QJsonObject tekken, fine;
        for (const QJsonValue &v : models) {
            const QString path = v.toObject().value(QStringLiteral("path")).toString();
            if (path.endsWith(QStringLiteral("/tekken.gguf")))
                tekken = v.toObject();
            else if (path.endsWith(QStringLiteral("/fine.gguf")))
                fine = v.toObject();
        }
        QVERIFY(!tekken.value(QStringLiteral("supported")).toBool());
        QVERIFY2(tekken.value(QStringLiteral("reason")).toString().startsWith(why), r.out.constData());
        QVERIFY(fine.value(QStringLiteral("supported")).toBool());
        r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("info"), dir.path() + QStringLiteral("/tekken.gguf")});
        QVERIFY(r.code != 0);
        QVERIFY2(QString::fromUtf8(r.err).contains(why), r.err.constData());
        r = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("info"), dir.path() + QStringLiteral("/fine.gguf")});
        QVERIFY2(r.code == 0, r.err.constData());
    }

    void emptyStores()
    {
        QTemporaryDir home;
        QProcessEnvironment env = m_env;
        env.insert(QStringLiteral("HOME"), home.path());
        env.insert(QStringLiteral("XDG_CACHE_HOME"), home.path() + QStringLiteral("/.cache"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), home.path() + QStringLiteral("/.config"));
        const Run r = attnvizIn(env, {QStringLiteral("model"), QStringLiteral("list")});
        QCOMPARE(r.code, 0);
        if (QFileInfo(QStringLiteral("/usr/share/ollama/.ollama/models")).isDir())
            QSKIP("this machine has Ollama's service store");
        QVERIFY2(r.out.startsWith("No models found. Looked in:\n  Hugging Face  " + home.path().toUtf8() +
                                  "/.cache/huggingface/hub  (missing)\n"),
                 r.out.constData());
    }

    // The spec opens what the folder opens: model info and tokenize through hf: equal the fixture's.
    void specsOpenTheSameModel()
    {
        const QString fixture = QString::fromUtf8(ATTNVIZ_FIXTURE("/models/gpt2-tiny"));
        Run viaSpec = attnvizIn(m_env, {QStringLiteral("tokenize"), QStringLiteral("--model"), QStringLiteral("hf:openai-community/gpt2-tiny"),
                                        QStringLiteral("Hello, ship!")});
        const Run viaFolder = attnvizIn(m_env, {QStringLiteral("tokenize"), QStringLiteral("--model"), fixture, QStringLiteral("Hello, ship!")});
        QCOMPARE(viaSpec.code, 0);
        QCOMPARE(viaSpec.out, viaFolder.out);
        QVERIFY(viaSpec.out.count('\n') >= 4);

        viaSpec = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("info"), QStringLiteral("hf:openai-community/gpt2-tiny"),
                                    QStringLiteral("--json")});
        QCOMPARE(viaSpec.code, 0);
        const QJsonObject info = QJsonDocument::fromJson(viaSpec.out).object();
        QCOMPARE(info.value(QStringLiteral("family")).toString(), QStringLiteral("gpt2"));
        QCOMPARE(info.value(QStringLiteral("name")).toString(), QStringLiteral("openai-community/gpt2-tiny"));
        QCOMPARE(info.value(QStringLiteral("layers")).toInt(), 2);

        // GGUF models in each store: Ollama's blob (no .gguf name), LM Studio's file, a GGUF repository
        const QString gguf = QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/"));
        const QList<QPair<QString, QString>> same = {{QStringLiteral("ollama:llama-tiny:q8_0"), gguf + QStringLiteral("llama-q8_0.gguf")},
                                                     {QStringLiteral("ollama:qwen3-tiny"), gguf + QStringLiteral("qwen3.gguf")},
                                                     {QStringLiteral("hf:someone/qwen3-tiny-GGUF"), gguf + QStringLiteral("qwen3.gguf")},
                                                     {m_trees.lmstudio + QStringLiteral("/lmstudio-community/llama-tiny-GGUF/llama-tiny-Q4_K_M.gguf"),
                                                      gguf + QStringLiteral("llama-q4_k.gguf")}};
        for (const auto &[spec, file] : same) {
            const Run a = attnvizIn(m_env, {QStringLiteral("tokenize"), QStringLiteral("--model"), spec, QStringLiteral("Hello, ship!")});
            const Run b = attnvizIn(m_env, {QStringLiteral("tokenize"), QStringLiteral("--model"), file, QStringLiteral("Hello, ship!")});
            QVERIFY2(a.code == 0, qPrintable(spec + QStringLiteral(": ") + QString::fromUtf8(a.err)));
            QCOMPARE(a.out, b.out);
            QVERIFY(a.out.count('\n') >= 3);
        }
        const Run ggufRun = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("run"), QStringLiteral("ollama:llama-tiny:q8_0"),
                                              QStringLiteral("--text"), QStringLiteral("the ship")});
        QCOMPARE(ggufRun.code, 0);
        const QJsonObject ggufModel = QJsonDocument::fromJson(ggufRun.out).object().value(QStringLiteral("model")).toObject();
        QCOMPARE(ggufModel.value(QStringLiteral("family")).toString(), QStringLiteral("llama"));
        QCOMPARE(ggufModel.value(QStringLiteral("parameters")).toInteger(), 57504); // rope_freqs (4) not counted

        const Run run = attnvizIn(m_env, {QStringLiteral("model"), QStringLiteral("run"), QStringLiteral("hf:Qwen/Qwen3-tiny"),
                                          QStringLiteral("--text"), QStringLiteral("the ship")});
        QCOMPARE(run.code, 0);
        QCOMPARE(QJsonDocument::fromJson(run.out).object().value(QStringLiteral("model")).toObject().value(QStringLiteral("family")).toString(),
                 QStringLiteral("qwen3"));
    }

    // What the README shows, run on the test's stores (its names replaced by the fake ones).
    void readmeCommands()
    {
        QFile f(QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/README.md")));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QString readme = QString::fromUtf8(f.readAll());
        for (const char *shown : {"attnviz model list                                   # the table; --json for scripts",
                                  "attnviz --model hf:Qwen/Qwen3-0.6B ", "attnviz --model ollama:qwen3:0.6b ",
                                  "attnviz model list [--json] [--folder DIR] [--add-folder DIR] [--remove-folder DIR]"})
            QVERIFY2(readme.contains(QString::fromUtf8(shown)), shown);
        const QString home = QStringLiteral("/home/me");
        QProcessEnvironment env = m_env;
        const QString shownError = QStringLiteral("attnviz model info: \"ollama:qwen3:4b\": no such model in Ollama's store (looked for each of ") +
                                   home + QStringLiteral("/.ollama/models/manifests/registry.ollama.ai/library/qwen3/4b, "
                                                         "/usr/share/ollama/.ollama/models/manifests/registry.ollama.ai/library/qwen3/4b)");
        QVERIFY2(readme.contains(QStringLiteral("$ attnviz model info ollama:qwen3:4b\n") + shownError), "the README's error line");
        const Run r = attnvizIn(env, {QStringLiteral("model"), QStringLiteral("info"), QStringLiteral("ollama:qwen3:4b")});
        QCOMPARE(r.code, 2);
        QCOMPARE(QString::fromUtf8(r.err), QString(shownError).replace(home, m_trees.home) + QLatin1Char('\n'));
        const Run info = attnvizIn(env, {QStringLiteral("model"), QStringLiteral("info"), QStringLiteral("hf:Qwen/Qwen3-tiny")});
        QCOMPARE(info.code, 0);
        QVERIFY2(info.out.startsWith("family      qwen3\nname        Qwen/Qwen3-tiny\n"), info.out.constData());
    }

    void specsThatNameNothing_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        const QString hub = m_trees.hub, ollama = m_trees.ollama;
        QTest::newRow("info hf") << QStringList{QStringLiteral("model"), QStringLiteral("info"), QStringLiteral("hf:nobody/nothing")}
                                 << "attnviz model info: \"hf:nobody/nothing\": not in the Hugging Face cache (looked for " + hub +
                                        "/models--nobody--nothing)";
        QTest::newRow("run ollama") << QStringList{QStringLiteral("model"), QStringLiteral("run"), QStringLiteral("ollama:qwen3:4b"),
                                                   QStringLiteral("--text"), QStringLiteral("a")}
                                    << "attnviz model run: \"ollama:qwen3:4b\": no such model in Ollama's store (looked for each of " +
                                           ollama + "/manifests/registry.ollama.ai/library/qwen3/4b, "
                                                    "/usr/share/ollama/.ollama/models/manifests/registry.ollama.ai/library/qwen3/4b)";
        QTest::newRow("tokenize gone") << QStringList{QStringLiteral("tokenize"), QStringLiteral("--model"), QStringLiteral("ollama:gone"),
                                                      QStringLiteral("a")}
                                       << "attnviz tokenize: " + ollama + "/blobs/sha256-" + sha256Hex(tinyGguf("gone")) +
                                              ": missing (the model layer " + ollama + "/manifests/registry.ollama.ai/library/gone/latest names)";
        QTest::newRow("bench broken") << QStringList{QStringLiteral("bench"), QStringLiteral("--model"), QStringLiteral("ollama:broken")}
                                      << "attnviz bench: " + ollama + "/manifests/registry.ollama.ai/library/broken/latest: malformed JSON";
        QTest::newRow("info escape") << QStringList{QStringLiteral("model"), QStringLiteral("info"), QStringLiteral("hf:someone/escape")}
                                     << "attnviz model info: " + QFileInfo(hub).canonicalFilePath() +
                                            "/models--someone--escape/snapshots/0123456789abcdef0123456789abcdef01234567/model.safetensors: "
                                            "a symbolic link out of " + hub + " (not followed)";
    }

    void specsThatNameNothing()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const Run r = attnvizIn(m_env, args);
        QCOMPARE(r.code, 2);
        QVERIFY2(QString::fromUtf8(r.err).startsWith(message), r.err.constData());
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(r.out.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestModelStoresCli)
#include "tst_modelstorescli.moc"
