// SPDX-License-Identifier: GPL-3.0-or-later
// The command line of reads.h as a user runs it on the tiny fixture folders: `model run --lens`
// (the lens grid against tests/fixtures/reads/reads-expected.json, float64), `generate` (greedy and
// seeded sampled ids equal to the float64 reference's, the cut at gpt2-tiny's 32 positions said on
// stderr), `export --all-layers` (every layer's and head's weights, against the core's trace),
// `--ablate` on generate and export (the edited model's, as `model run --ablate` computes
// it) and the bad inputs: one line, exit code 2, nothing on stdout.
#include "testpaths.h"
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "../support/modelfolders.h"
#include "../support/runattnviz.h"

#include "attnviz/pretrained.h"
#include "attnviz/seq2seqreads.h"

#include <cmath>

namespace {

using attnviz_test::Run;

Run execCli(const QStringList &args) { return attnviz_test::runAttnviz(args, 300000); }

QString fixture(const QString &model) { return attnviz_test::fixtureModel(model); }

QJsonObject reference(const QString &model)
{
    QFile f(QString::fromUtf8(ATTNVIZ_FIXTURE("/reads/reads-expected.json")));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("models")).toObject().value(model).toObject();
}

QString text(const QString &model) { return attnviz_test::expectedCase(model, 0).value(QStringLiteral("text")).toString(); }

QJsonArray generated(const Run &r) { return QJsonDocument::fromJson(r.out).object().value(QStringLiteral("generated")).toArray(); }

} // namespace

class TestReadsCli : public QObject {
    Q_OBJECT
private slots:
    void modelRunLens_data()
    {
        QTest::addColumn<QString>("model");
        QTest::newRow("gpt2-tiny") << QStringLiteral("gpt2-tiny");
        QTest::newRow("bert-tiny") << QStringLiteral("bert-tiny");
    }

    // Every cell's top 5 probabilities, the actual token's probability and rank, the entropy.
    void modelRunLens()
    {
        QFETCH(QString, model);
        const Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(model), QStringLiteral("--text"), text(model),
                               QStringLiteral("--precision"), QStringLiteral("float64"), QStringLiteral("--lens")});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        const QJsonArray got = o.value(QStringLiteral("lens")).toObject().value(QStringLiteral("layers")).toArray();
        const QJsonArray want = reference(model).value(QStringLiteral("lens")).toArray();
        QCOMPARE(got.size(), want.size());
        double worst = 0;
        for (int l = 0; l < want.size(); ++l) {
            QCOMPARE(got[l].toArray().size(), want[l].toArray().size());
            for (int i = 0; i < want[l].toArray().size(); ++i) {
                const QJsonObject g = got[l][i].toObject(), w = want[l][i].toObject();
                const QJsonArray top = g.value(QStringLiteral("top")).toArray();
                QCOMPARE(top.size(), 5);
                for (int k = 0; k < 5; ++k)
                    worst = std::max(worst, std::abs(top[k][QStringLiteral("p")].toDouble() - w.value(QStringLiteral("p"))[k].toDouble()));
                worst = std::max(worst, std::abs(g.value(QStringLiteral("entropy")).toDouble() - w.value(QStringLiteral("entropy")).toDouble()));
                if (w.contains(QStringLiteral("actual_p"))) {
                    worst = std::max(worst, std::abs(g.value(QStringLiteral("actual_p")).toDouble() - w.value(QStringLiteral("actual_p")).toDouble()));
                    QCOMPARE(g.value(QStringLiteral("actual_rank")).toInt(), w.value(QStringLiteral("actual_rank")).toInt());
                } else {
                    QVERIFY(!g.contains(QStringLiteral("actual_p")));
                }
            }
        }
        QVERIFY2(worst < 1e-9, qPrintable(QString::number(worst)));
        // without --lens: no "lens"
        const Run plain = execCli({QStringLiteral("model"), QStringLiteral("run"), fixture(model), QStringLiteral("--text"), text(model)});
        QCOMPARE(plain.code, 0);
        QVERIFY(!QJsonDocument::fromJson(plain.out).object().contains(QStringLiteral("lens")));
    }

    // `model run --lens` of an encoder-decoder model: the decoder read after each sub-layer,
    // lens.stages[stage][position] named by stage_names, every cell (top 5 ids and p, entropy, the
    // following target token's p and rank) the core's seq2seqLens of the same source and target in
    // float64; the bundled dates model's last stage predicts each next character of "1998-03-03".
    void modelRunLensEncoderDecoder()
    {
        const QString t5 = fixture(QStringLiteral("t5-tiny"));
        const QString source = QStringLiteral("the 3rd of March, 1998"), target = QStringLiteral("1998-03-03");
        const Run r = execCli({QStringLiteral("model"), QStringLiteral("run"), t5, QStringLiteral("--text"), source,
                               QStringLiteral("--target"), target, QStringLiteral("--precision"), QStringLiteral("float64"),
                               QStringLiteral("--lens")});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject lens = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("lens")).toObject();
        std::unique_ptr<attnviz::Model> m;
        QVERIFY(attnviz::openPretrained(t5.toStdString(), {}, m).ok());
        attnviz::TraceRequest req;
        req.text = source.toStdString();
        req.target = target.toStdString();
        attnviz::Trace<double> tr;
        QVERIFY(m->trace(req, tr).ok());
        attnviz::Seq2SeqLens want;
        QVERIFY(attnviz::seq2seqLens(*m, tr, 5, want).ok());
        const QJsonArray names = lens.value(QStringLiteral("stage_names")).toArray();
        const QJsonArray stages = lens.value(QStringLiteral("stages")).toArray();
        QCOMPARE(names.size(), 3 * tr.numLayers());
        QCOMPARE(stages.size(), want.rows());
        QCOMPARE(names[0].toString(), QStringLiteral("L0 self"));
        QCOMPARE(names[1].toString(), QStringLiteral("L0 cross"));
        QCOMPARE(names[names.size() - 1].toString(), QStringLiteral("L%1 MLP").arg(tr.numLayers() - 1));
        QVERIFY(!lens.contains(QStringLiteral("layers")));
        for (int row = 0; row < want.rows(); ++row) {
            QCOMPARE(stages[row].toArray().size(), int(tr.tokens.size()));
            for (int i = 0; i < want.positions; ++i) {
                const QJsonObject g = stages[row][i].toObject();
                const attnviz::LensCell &w = want.at(row, i);
                const QJsonArray top = g.value(QStringLiteral("top")).toArray();
                QCOMPARE(top.size(), 5);
                for (int k = 0; k < 5; ++k) {
                    QCOMPARE(top[k][QStringLiteral("id")].toInt(), w.top[size_t(k)].id);
                    QVERIFY(std::abs(top[k][QStringLiteral("p")].toDouble() - w.top[size_t(k)].p) < 1e-12);
                }
                QVERIFY(std::abs(g.value(QStringLiteral("entropy")).toDouble() - w.entropy) < 1e-12);
                QCOMPARE(g.contains(QStringLiteral("actual_rank")), w.actualRank > 0);
                QCOMPARE(g.value(QStringLiteral("actual_rank")).toInt(), w.actualRank);
            }
        }
        // the last position has no following target token; the others do
        QVERIFY(!stages[0][int(tr.tokens.size()) - 1].toObject().contains(QStringLiteral("actual_p")));
        QVERIFY(stages[0][0].toObject().contains(QStringLiteral("actual_p")));

        // the bundled dates model (float32): after its last MLP it reads each next character as the top token
        const Run d = execCli({QStringLiteral("model"), QStringLiteral("run"), QStringLiteral("bundled-dates"), QStringLiteral("--text"),
                               source, QStringLiteral("--target"), target, QStringLiteral("--lens")});
        QVERIFY2(d.code == 0, d.err.constData());
        const QJsonObject dl = QJsonDocument::fromJson(d.out).object().value(QStringLiteral("lens")).toObject();
        const QJsonArray last = dl.value(QStringLiteral("stages")).toArray().last().toArray();
        QVERIFY(last.size() > target.size());
        for (int i = 0; i + 1 < last.size(); ++i)
            QCOMPARE(last[i][QStringLiteral("actual_rank")].toInt(), 1);
    }

    void generate()
    {
        const QJsonObject ref = reference(QStringLiteral("gpt2-tiny"));
        const QString g = fixture(QStringLiteral("gpt2-tiny")), t = text(QStringLiteral("gpt2-tiny"));
        Run r = execCli({QStringLiteral("generate"), QStringLiteral("--model"), g, QStringLiteral("--text"), t, QStringLiteral("--tokens"),
                         QStringLiteral("6"), QStringLiteral("--json")});
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(generated(r), ref.value(QStringLiteral("greedy")).toArray());
        const QJsonObject s = ref.value(QStringLiteral("sampled")).toObject();
        r = execCli({QStringLiteral("generate"), QStringLiteral("--model"), g, QStringLiteral("--text"), t, QStringLiteral("--tokens"),
                     QStringLiteral("6"), QStringLiteral("--temperature"), QStringLiteral("0.8"), QStringLiteral("--top-k"),
                     QStringLiteral("50"), QStringLiteral("--top-p"), QStringLiteral("0.9"), QStringLiteral("--seed"), QStringLiteral("7"),
                     QStringLiteral("--json")});
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(generated(r), s.value(QStringLiteral("ids")).toArray());
        // plain text: the text and its continuation on one line
        r = execCli({QStringLiteral("generate"), QStringLiteral("--model"), g, QStringLiteral("--text"), t, QStringLiteral("--tokens"),
                     QStringLiteral("3")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.startsWith(t.toUtf8()));
        QVERIFY(r.out.size() > t.toUtf8().size() + 1);
    }

    // gpt2-tiny reads 32 positions: 40 asked after 13 gives 19, and the note says so.
    void generateCut()
    {
        const Run r = execCli({QStringLiteral("generate"), QStringLiteral("--model"), fixture(QStringLiteral("gpt2-tiny")),
                               QStringLiteral("--text"), text(QStringLiteral("gpt2-tiny")), QStringLiteral("--tokens"), QStringLiteral("40"),
                               QStringLiteral("--json")});
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(generated(r).size(), 19);
        QCOMPARE(r.err, QByteArray("attnviz generate: note: gpt2-tiny reads at most 32 positions: 19 of the 40 tokens asked for fit "
                                   "after the text's 13\n"));
    }

    // A vocabulary token that spells ESC (gpt2-tiny's byte 0x1b, id 215) made the one the model
    // predicts everywhere (a zero final norm with a bias of ones, the token's row large): the plain
    // output escapes it as --json and tokenize do, never a raw terminal escape.
    void generateEscapesControls()
    {
        QTemporaryDir tmp;
        const QString dir = attnviz_test::copyModelFolder(QStringLiteral("gpt2-tiny"), tmp);
        attnviz_test::Safetensors st = attnviz_test::readSafetensors(dir + QStringLiteral("/model.safetensors"));
        auto fill = [&](const QString &name, qint64 from, qint64 count, float value) {
            const qint64 at =
                st.header.value(name).toObject().value(QStringLiteral("data_offsets")).toArray()[0].toInteger();
            for (qint64 k = 0; k < count; ++k)
                st.data.replace(int(at + 4 * (from + k)), 4, reinterpret_cast<const char *>(&value), 4);
        };
        fill(QStringLiteral("transformer.ln_f.weight"), 0, 16, 0.0f);
        fill(QStringLiteral("transformer.ln_f.bias"), 0, 16, 1.0f);
        fill(QStringLiteral("transformer.wte.weight"), 215 * 16, 16, 10.0f);
        attnviz_test::writeSafetensors(dir + QStringLiteral("/model.safetensors"), st);
        Run r =
            execCli({QStringLiteral("generate"), QStringLiteral("--model"), dir, QStringLiteral("--text"),
                     QStringLiteral("a b"), QStringLiteral("--tokens"), QStringLiteral("3"), QStringLiteral("--json")});
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(generated(r), (QJsonArray{215, 215, 215}));
        r = execCli({QStringLiteral("generate"), QStringLiteral("--model"), dir, QStringLiteral("--text"),
                     QStringLiteral("a b"), QStringLiteral("--tokens"), QStringLiteral("3")});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(!r.out.contains('\x1b'), r.out.toHex().constData());
        QCOMPARE(r.out, QByteArray("a b\\x1b\\x1b\\x1b\n"));
    }

    // export --view lens (the grid's top probabilities, the figure) and --view dla (a typed token's
    // parts and logit against the reference).
    void exportViews()
    {
        QTemporaryDir tmp;
        const QString g = fixture(QStringLiteral("gpt2-tiny")), t = text(QStringLiteral("gpt2-tiny"));
        const QJsonObject ref = reference(QStringLiteral("gpt2-tiny"));
        const QString lens = tmp.filePath(QStringLiteral("lens.json"));
        Run r = execCli({QStringLiteral("export"), QStringLiteral("--model"), g, QStringLiteral("--view"), QStringLiteral("lens"),
                         QStringLiteral("--sentence"), t, QStringLiteral("--out"), lens});
        QVERIFY2(r.code == 0, r.err.constData());
        QFile f(lens);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
        const QJsonArray data = o.value(QStringLiteral("data")).toArray(), want = ref.value(QStringLiteral("lens")).toArray();
        QCOMPARE(data.size(), 2);
        for (int l = 0; l < 2; ++l)
            for (int i = 0; i < 13; ++i)
                QVERIFY(std::abs(data[l][i].toDouble() - want[l][i][QStringLiteral("p")][0].toDouble()) < 2e-5);
        QCOMPARE(o.value(QStringLiteral("columns")).toArray().size(), 13);
        // the reference's first attribution: the token after position 10, typed as its spelling
        const QJsonObject d = ref.value(QStringLiteral("dla"))[0].toObject();
        QFile vf(fixture(QStringLiteral("gpt2-tiny")) + QStringLiteral("/vocab.json"));
        QVERIFY(vf.open(QIODevice::ReadOnly));
        const QJsonObject vocab = QJsonDocument::fromJson(vf.readAll()).object();
        QString spelling;
        for (auto it = vocab.begin(); it != vocab.end(); ++it)
            if (it.value().toInt() == d.value(QStringLiteral("target")).toInt())
                spelling = it.key();
        QVERIFY(!spelling.isEmpty());
        const QString dla = tmp.filePath(QStringLiteral("dla.json"));
        r = execCli({QStringLiteral("export"), QStringLiteral("--model"), g, QStringLiteral("--view"), QStringLiteral("dla"),
                     QStringLiteral("--sentence"), t, QStringLiteral("--query"), QString::number(d.value(QStringLiteral("position")).toInt()),
                     QStringLiteral("--token"), spelling, QStringLiteral("--out"), dla});
        QVERIFY2(r.code == 0, r.err.constData());
        QFile df(dla);
        QVERIFY(df.open(QIODevice::ReadOnly));
        const QJsonObject a = QJsonDocument::fromJson(df.readAll()).object();
        const QJsonObject extra = a.value(QStringLiteral("extra")).toObject();
        QCOMPARE(extra.value(QStringLiteral("target")).toInt(), d.value(QStringLiteral("target")).toInt());
        QVERIFY(std::abs(extra.value(QStringLiteral("logit")).toDouble() - d.value(QStringLiteral("logit")).toDouble()) < 1e-4);
        for (int l = 0; l < 2; ++l) {
            for (int h = 0; h < 4; ++h)
                QVERIFY(std::abs(a.value(QStringLiteral("data"))[l][h].toDouble() - d.value(QStringLiteral("head"))[l][h].toDouble()) < 1e-4);
            QVERIFY(std::abs(a.value(QStringLiteral("data"))[l][4].toDouble() - d.value(QStringLiteral("mlp"))[l].toDouble()) < 1e-4);
        }
        for (const QString &fig : {QStringLiteral("lens.png"), QStringLiteral("dla.svg")}) {
            r = execCli({QStringLiteral("export"), QStringLiteral("--model"), g, QStringLiteral("--view"), fig.section(QLatin1Char('.'), 0, 0),
                         QStringLiteral("--sentence"), t, QStringLiteral("--out"), tmp.filePath(fig)});
            QVERIFY2(r.code == 0, r.err.constData());
            QVERIFY(QFileInfo(tmp.filePath(fig)).size() > 1000);
        }
        // bad input: a token not in the vocabulary, a masked LM for attribution, a position past the text
        r = execCli({QStringLiteral("export"), QStringLiteral("--model"), g, QStringLiteral("--view"), QStringLiteral("dla"),
                     QStringLiteral("--sentence"), t, QStringLiteral("--token"), QStringLiteral(" catapultingly"), QStringLiteral("--out"), dla});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.endsWith("attnviz export: --view dla: token: \" catapultingly\" is not in the vocabulary of gpt2-tiny (it is 2 "
                                "tokens)\n"),
                 r.err.constData());
        r = execCli({QStringLiteral("export"), QStringLiteral("--model"), fixture(QStringLiteral("bert-tiny")), QStringLiteral("--view"),
                     QStringLiteral("dla"), QStringLiteral("--sentence"), QStringLiteral("the cat"), QStringLiteral("--out"), dla});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("--view dla attributes a causal language model's logit"));
        r = execCli({QStringLiteral("export"), QStringLiteral("--model"), g, QStringLiteral("--view"), QStringLiteral("lens"),
                     QStringLiteral("--sentence"), t, QStringLiteral("--query"), QStringLiteral("13"), QStringLiteral("--out"), lens});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.endsWith("attnviz export: --query 13: the text has 13 tokens\n"), r.err.constData());
    }

    // export --view lens|dla of an encoder-decoder model: the decoder's stages as rows ("L0 self",
    // "L0 cross", "L0 MLP", …) and its self- and cross-attention heads as columns, the numbers the
    // core's seq2seqLens and seq2seqAttribute give for the same source and target; a post-norm BART's
    // attribution refused in one line.
    void exportDecoderStages()
    {
        QTemporaryDir tmp;
        const QString t5 = fixture(QStringLiteral("t5-tiny"));
        const QString source = QStringLiteral("the 3rd of March, 1998"), target = QStringLiteral("1998-03-03");
        std::unique_ptr<attnviz::Model> m;
        QVERIFY(attnviz::openPretrained(t5.toStdString(), {}, m).ok());
        attnviz::TraceRequest req;
        req.text = source.toStdString();
        req.target = target.toStdString();
        req.allPredictions = true;
        attnviz::Trace<float> tr;
        QVERIFY(m->trace(req, tr).ok());
        const int L = tr.numLayers(), P = int(tr.tokens.size()), H = m->info().heads;
        attnviz::Seq2SeqLens lens;
        QVERIFY(attnviz::seq2seqLens(*m, tr, 5, lens).ok());
        const QStringList common{QStringLiteral("export"), QStringLiteral("--model"), t5, QStringLiteral("--sentence"), source,
                                 QStringLiteral("--target"), target};
        const QString lensOut = tmp.filePath(QStringLiteral("lens.json"));
        Run r = execCli(common + QStringList{QStringLiteral("--view"), QStringLiteral("lens"), QStringLiteral("--out"), lensOut});
        QVERIFY2(r.code == 0, r.err.constData());
        QFile f(lensOut);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
        const QJsonArray rows = o.value(QStringLiteral("rows")).toArray(), data = o.value(QStringLiteral("data")).toArray();
        QCOMPARE(rows.size(), 3 * L);
        QCOMPARE(rows[0].toString(), QStringLiteral("L0 self"));
        QCOMPARE(rows[1].toString(), QStringLiteral("L0 cross"));
        QCOMPARE(rows[2].toString(), QStringLiteral("L0 MLP"));
        QCOMPARE(rows[3 * L - 1].toString(), QStringLiteral("L%1 MLP").arg(L - 1));
        QCOMPARE(o.value(QStringLiteral("columns")).toArray().size(), P);
        const QJsonArray tops = o.value(QStringLiteral("extra")).toObject().value(QStringLiteral("top_tokens")).toArray();
        for (int row = 0; row < 3 * L; ++row)
            for (int p = 0; p < P; ++p) {
                QVERIFY(std::abs(data[row][p].toDouble() - lens.at(row, p).top.front().p) < 1e-6);
                QCOMPARE(tops[row][p].toString(), QString::fromStdString(lens.at(row, p).top.front().token));
            }
        // attribution at position 2 of the predicted token (the tab's default)
        const int pos = 2;
        attnviz::Seq2SeqAttribution a;
        QVERIFY(attnviz::seq2seqAttribute(*m, tr, pos, tr.predictions.next[size_t(pos)].front().id, a).ok());
        const QString csv = tmp.filePath(QStringLiteral("dla.csv"));
        r = execCli(common + QStringList{QStringLiteral("--view"), QStringLiteral("dla"), QStringLiteral("--query"), QString::number(pos),
                                         QStringLiteral("--out"), csv});
        QVERIFY2(r.code == 0, r.err.constData());
        QFile cf(csv);
        QVERIFY(cf.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = cf.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), L + 1);
        const QList<QByteArray> header = lines[0].split(',');
        QCOMPARE(header.size(), 2 * H + 2);
        QCOMPARE(header[1], QByteArray("\"self 0\""));
        QCOMPARE(header[H + 1], QByteArray("\"cross 0\""));
        QCOMPARE(header.back(), QByteArray("\"MLP\""));
        for (int l = 0; l < L; ++l) {
            const QList<QByteArray> cells = lines[l + 1].split(',');
            QCOMPARE(cells.size(), 2 * H + 2);
            for (int h = 0; h < H; ++h) {
                QVERIFY(std::abs(cells[1 + h].toDouble() - a.selfHead[size_t(l * H + h)]) < 1e-5);
                QVERIFY(std::abs(cells[1 + H + h].toDouble() - a.crossHead[size_t(l * H + h)]) < 1e-5);
            }
            QVERIFY(std::abs(cells[1 + 2 * H].toDouble() - a.mlp[size_t(l)]) < 1e-5);
        }
        // JSON: the logit and the biases beside
        const QString json = tmp.filePath(QStringLiteral("dla.json"));
        r = execCli(common + QStringList{QStringLiteral("--view"), QStringLiteral("dla"), QStringLiteral("--query"), QString::number(pos),
                                         QStringLiteral("--out"), json});
        QVERIFY2(r.code == 0, r.err.constData());
        QFile jf(json);
        QVERIFY(jf.open(QIODevice::ReadOnly));
        const QJsonObject extra = QJsonDocument::fromJson(jf.readAll()).object().value(QStringLiteral("extra")).toObject();
        QVERIFY(std::abs(extra.value(QStringLiteral("logit")).toDouble() - a.logit) < 1e-5);
        QCOMPARE(extra.value(QStringLiteral("heads_per_attention")).toInt(), H);
        QCOMPARE(extra.value(QStringLiteral("self_attention_bias")).toArray().size(), L);
        // a post-norm decoder: one line why not
        r = execCli({QStringLiteral("export"), QStringLiteral("--model"), fixture(QStringLiteral("bart-tiny")), QStringLiteral("--sentence"),
                     source, QStringLiteral("--target"), target, QStringLiteral("--view"), QStringLiteral("dla"), QStringLiteral("--out"), json});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.endsWith("attnviz export: --view dla: bart-tiny: a post-norm decoder (bart) normalizes the whole stream "
                                "after every add, so its logit is no sum of direct paths (attribution: pre-norm T5 and mBART)\n"),
                 r.err.constData());
        QCOMPARE(r.err.count("attnviz export:"), 1);
    }

    // export --all-layers: every layer's and head's weights, equal to the core's trace of the same
    // text (NPY read byte by byte: its header's shape, then float32 rows; JSON with tokens and
    // positions; CSV a row per weight); figures and --head refused in one line.
    void exportAllLayers()
    {
        QTemporaryDir tmp;
        const QString g = fixture(QStringLiteral("gpt2-tiny")), t = QStringLiteral("the cat sat on the mat");
        std::unique_ptr<attnviz::Model> m;
        QVERIFY(attnviz::openPretrained(g.toStdString(), {}, m).ok());
        attnviz::TraceRequest req;
        req.text = t.toStdString();
        attnviz::Trace<float> tr;
        QVERIFY(m->trace(req, tr).ok());
        const int n = int(tr.tokens.size());
        QCOMPARE(n, 6);
        auto exportTo = [&](const QString &name) {
            return execCli({QStringLiteral("export"), QStringLiteral("--model"), g, QStringLiteral("--sentence"), t,
                            QStringLiteral("--all-layers"), QStringLiteral("--out"), tmp.filePath(name)});
        };
        Run r = exportTo(QStringLiteral("all.npy"));
        QVERIFY2(r.code == 0, r.err.constData());
        QFile f(tmp.filePath(QStringLiteral("all.npy")));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray npy = f.readAll();
        QVERIFY(npy.startsWith(QByteArray("\x93NUMPY\x01\x00", 8)));
        const int headerLen = int(uchar(npy[8])) | int(uchar(npy[9])) << 8;
        QVERIFY(npy.mid(10, headerLen).contains("'shape': (2,4,6,6)"));
        QCOMPARE(npy.size(), 10 + headerLen + 2 * 4 * 6 * 6 * 4);
        const float *v = reinterpret_cast<const float *>(npy.constData() + 10 + headerLen);
        for (int l = 0; l < 2; ++l)
            for (int h = 0; h < 4; ++h)
                for (int i = 0; i < n; ++i)
                    for (int j = 0; j < n; ++j)
                        QCOMPARE(v[((l * 4 + h) * n + i) * n + j], j <= i ? tr.weights(l, h)(i, j) : 0.0f);
        r = exportTo(QStringLiteral("all.json"));
        QVERIFY2(r.code == 0, r.err.constData());
        QFile jf(tmp.filePath(QStringLiteral("all.json")));
        QVERIFY(jf.open(QIODevice::ReadOnly));
        const QJsonObject o = QJsonDocument::fromJson(jf.readAll()).object();
        QCOMPARE(o.value(QStringLiteral("shape")).toArray(), (QJsonArray{2, 4, 6, 6}));
        QCOMPARE(o.value(QStringLiteral("query_positions")).toArray().size(), 6);
        QCOMPARE(o.value(QStringLiteral("key_tokens")).toArray()[1].toString(), QStringLiteral("␣cat"));
        QCOMPARE(float(o.value(QStringLiteral("weights"))[1][2][3][1].toDouble()), tr.weights(1, 2)(3, 1));
        r = exportTo(QStringLiteral("all.csv"));
        QVERIFY2(r.code == 0, r.err.constData());
        QFile cf(tmp.filePath(QStringLiteral("all.csv")));
        QVERIFY(cf.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = cf.readAll().split('\n');
        QCOMPARE(lines.front(), QByteArray("layer,head,query_index,query,key_index,key,weight"));
        QCOMPARE(lines.size(), 1 + 2 * 4 * 36 + 1); // the last line ends with a newline
        QVERIFY(lines[1 + 36 + 6 + 0].startsWith("0,1,1,\"␣cat\",0,\"the\","));
        // bad input: a figure, a head of its own
        r = execCli({QStringLiteral("export"), QStringLiteral("--model"), g, QStringLiteral("--sentence"), t, QStringLiteral("--all-layers"),
                     QStringLiteral("--out"), tmp.filePath(QStringLiteral("all.png"))});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.endsWith("attnviz export: --all-layers writes numbers: .npy, .csv or .json, not .png\n"), r.err.constData());
        r = execCli({QStringLiteral("export"), QStringLiteral("--model"), g, QStringLiteral("--sentence"), t, QStringLiteral("--all-layers"),
                     QStringLiteral("--head"), QStringLiteral("1"), QStringLiteral("--out"), tmp.filePath(QStringLiteral("x.npy"))});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.endsWith("attnviz export: --all-layers writes every layer and head: --head does not apply\n"), r.err.constData());
        QVERIFY(!QFile::exists(tmp.filePath(QStringLiteral("x.npy"))));
    }

    // generate --ablate: the edited model continues the text; its first token is the edited model's
    // most probable next token (`model run --ablate`), and the continuation is not the clean one's.
    void generateAblated()
    {
        const QString g = fixture(QStringLiteral("gpt2-tiny"));
        const QString t = QStringLiteral("The cat sat on the mat because it was");
        const QStringList ablate{QStringLiteral("--ablate"), QStringLiteral("1.2"), QStringLiteral("--ablate"), QStringLiteral("0.0:mean")};
        const QStringList gen{QStringLiteral("generate"), QStringLiteral("--model"), g, QStringLiteral("--text"), t,
                              QStringLiteral("--tokens"), QStringLiteral("8"), QStringLiteral("--json")};
        const Run clean = execCli(gen);
        const Run edited = execCli(gen + ablate);
        QVERIFY2(clean.code == 0 && edited.code == 0, edited.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(edited.out).object();
        QCOMPARE(o.value(QStringLiteral("edits")).toArray(),
                 (QJsonArray{QStringLiteral("attn.hook_z L1 H2 zero"), QStringLiteral("attn.hook_z L0 H0 mean")}));
        QVERIFY(!QJsonDocument::fromJson(clean.out).object().contains(QStringLiteral("edits")));
        QCOMPARE(generated(edited).size(), 8);
        QVERIFY(generated(edited) != generated(clean));
        const Run run = execCli(QStringList{QStringLiteral("model"), QStringLiteral("run"), g, QStringLiteral("--text"), t} + ablate);
        QVERIFY2(run.code == 0, run.err.constData());
        const QJsonArray next = QJsonDocument::fromJson(run.out).object().value(QStringLiteral("next_tokens")).toArray();
        QVERIFY(!next.isEmpty());
        QCOMPARE(generated(edited)[0].toInt(), next[0].toObject().value(QStringLiteral("id")).toInt());
    }

    // export --ablate: the matrices of a later layer are the edited model's (model run --ablate's
    // attentions), not the clean model's.
    void exportAblated()
    {
        QTemporaryDir tmp;
        const QString g = fixture(QStringLiteral("gpt2-tiny"));
        const QString t = QStringLiteral("The cat sat on the mat because it was");
        auto exportJson = [&](const QStringList &extra) {
            const QString out = tmp.filePath(QStringLiteral("w.json"));
            QFile::remove(out);
            const Run r = execCli(QStringList{QStringLiteral("export"), QStringLiteral("--model"), g, QStringLiteral("--sentence"), t,
                                              QStringLiteral("--layer"), QStringLiteral("1"), QStringLiteral("--head"), QStringLiteral("1"),
                                              QStringLiteral("--out"), out} + extra);
            if (r.code != 0)
                qWarning("%s", r.err.constData());
            QFile f(out);
            f.open(QIODevice::ReadOnly);
            return QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("data")).toArray();
        };
        const QStringList ablate{QStringLiteral("--ablate"), QStringLiteral("0.2")};
        const QJsonArray clean = exportJson({}), edited = exportJson(ablate);
        QVERIFY(!edited.isEmpty());
        QCOMPARE(edited.size(), clean.size());
        const Run run = execCli(QStringList{QStringLiteral("model"), QStringLiteral("run"), g, QStringLiteral("--text"), t} + ablate);
        QVERIFY2(run.code == 0, run.err.constData());
        const QJsonArray want = QJsonDocument::fromJson(run.out).object().value(QStringLiteral("attentions")).toArray()[1].toArray()[1].toArray();
        QCOMPARE(want.size(), edited.size());
        double worst = 0, change = 0;
        for (int i = 0; i < want.size(); ++i)
            for (int j = 0; j <= i; ++j) { // causal: the cells above the diagonal are masked
                const double e = edited[i].toArray()[j].toDouble();
                worst = std::max(worst, std::abs(e - want[i].toArray()[j].toDouble()));
                change = std::max(change, std::abs(e - clean[i].toArray()[j].toDouble()));
            }
        QVERIFY2(worst < 1e-6, qPrintable(QString::number(worst)));
        QVERIFY(change > 1e-6);
        // the word-vector attention has no heads to ablate: one line, exit 2, nothing written
        const QString never = tmp.filePath(QStringLiteral("never.png"));
        const Run r = execCli({QStringLiteral("export"), QStringLiteral("--sentence"), QStringLiteral("a cat"), QStringLiteral("--out"),
                               never, QStringLiteral("--ablate"), QStringLiteral("0.0")});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.endsWith("attnviz export: --ablate: head ablation edits a model checkpoint's forward (a model folder); the "
                                "word-vector attention has no heads to ablate\n"),
                 r.err.constData());
        QVERIFY(!QFile::exists(never));
    }

    void badInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        const QString g = fixture(QStringLiteral("gpt2-tiny"));
        const QString gen = QStringLiteral("generate");
        QTest::newRow("no model") << QStringList{gen, QStringLiteral("--text"), QStringLiteral("a")}
                                  << QStringLiteral("attnviz generate: --model: missing (a model folder, or `bundled`)\n");
        QTest::newRow("negative count") << QStringList{gen, QStringLiteral("--model"), g, QStringLiteral("--text"), QStringLiteral("a"),
                                                       QStringLiteral("--tokens"), QStringLiteral("-1")}
                                        << QStringLiteral("attnviz generate: --tokens: a count of 0 or more, not -1\n");
        QTest::newRow("top-p 0") << QStringList{gen, QStringLiteral("--model"), g, QStringLiteral("--text"), QStringLiteral("a"),
                                                QStringLiteral("--top-p"), QStringLiteral("0")}
                                 << QStringLiteral("attnviz generate: --top-p: a number in (0, 1], not 0\n");
        QTest::newRow("ablate a head it does not have")
            << QStringList{gen, QStringLiteral("--model"), g, QStringLiteral("--text"), QStringLiteral("a"), QStringLiteral("--ablate"),
                           QStringLiteral("1.4")}
            << QStringLiteral("attnviz generate: --ablate 1.4: head 4 is not one of the model's 4 query heads (0..3)\n");
        QTest::newRow("masked LM") << QStringList{gen, QStringLiteral("--model"), fixture(QStringLiteral("bert-tiny")),
                                                  QStringLiteral("--text"), QStringLiteral("a")}
                                   << QStringLiteral("attnviz generate: bert-tiny: generation needs a causal language model (this one "
                                                     "fills [MASK])\n");
    }

    void badInput()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const Run r = execCli(args);
        QCOMPARE(r.code, 2);
        QCOMPARE(QString::fromUtf8(r.err), message);
        QVERIFY(r.out.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestReadsCli)
#include "tst_readscli.moc"
