// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz heads --model M --corpus FILE [-o OUT.csv|OUT.json]`: the Layers × heads grid's scores
// (previous, first, same, self; induction from the model's own probe) averaged over a text file of
// prompts, one a line, with each score's spread over the prompts (headroles.h corpusHeadScores).
// `attnviz heads --model M --needle TEXT --question TEXT --haystack FILE [--depth X] [-o OUT]`: the
// needle-in-a-haystack probe and each head's retrieval score (needleprobe.h).
#include "commands.h"
#include "output.h"

#include "files/figureexport.h"

#include "attnviz/fileio.h"
#include "attnviz/headroles.h"
#include "attnviz/needleprobe.h"
#include "bundledmodel.h"

#include <QCommandLineParser>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <cstdio>

#include <unistd.h>

namespace attnviz::cli {

namespace {

struct NamedScore {
    const char *name;
    const CorpusScore *score;
};

// The retrieval probe's scores as CSV (layer,head,retrieval) or JSON (the probe and the grid).
QByteArray needleOutput(const Model &m, const NeedleProbe &probe, const QString &format)
{
    auto number = [](double v) { return std::isfinite(v) ? QString::number(v, 'g', 9) : QString(); };
    const Mat<double> &g = probe.retrieval;
    if (format == QLatin1String("csv")) {
        QByteArray bytes = "layer,head,retrieval\n";
        for (int l = 0; l < int(g.rows()); ++l)
            for (int h = 0; h < int(g.cols()); ++h)
                bytes += QStringLiteral("%1,%2,%3\n").arg(l).arg(h).arg(number(g(l, h))).toUtf8();
        return bytes;
    }
    QJsonArray rows, answer;
    for (int l = 0; l < int(g.rows()); ++l) {
        QJsonArray row;
        for (int h = 0; h < int(g.cols()); ++h)
            row.append(ui::jsonNumber(g(l, h)));
        rows.append(row);
    }
    for (int id : probe.answer)
        answer.append(id);
    QJsonObject o{{QStringLiteral("model"), QString::fromStdString(m.info().name)},
                  {QStringLiteral("promptTokens"), probe.promptTokens},
                  {QStringLiteral("needle"), QJsonArray{probe.needleBegin, probe.needleEnd}},
                  {QStringLiteral("answer"), answer},
                  {QStringLiteral("answerText"), QString::fromStdString(probe.answerText)},
                  {QStringLiteral("answerFromNeedle"), probe.answerFromNeedle},
                  {QStringLiteral("layers"), int(g.rows())},
                  {QStringLiteral("heads"), int(g.cols())},
                  {QStringLiteral("retrieval"), rows}};
    return QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n';
}

} // namespace

int heads(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "What each head does over many prompts: the Layers x heads grid's scores averaged over a corpus,\n"
        "a text file of prompts (one a line; empty lines skipped), each prompt traced on its own and\n"
        "counted once. Scores, per layer and head (query 0 left out, as in the window):\n"
        "  previous  mean of A[i][i-1]         first  mean of A[i][0] (the attention sink)\n"
        "  same      weight on earlier copies of the query's token (prompts where a token repeats)\n"
        "  self      mean of A[i][i]           induction  on the model's random probe (once, not the corpus;\n"
        "            empty in a layer whose sliding window does not reach back to the probe's first copy)\n"
        "Each with its mean over prompts, its spread (sample standard deviation over prompts) and the\n"
        "number of prompts where it is defined. Output: CSV (layer,head,score,mean,spread,prompts) or\n"
        "JSON (layers x heads grids), to -o FILE or standard output.\n"
        "\n"
        "With --needle, --question and --haystack instead of --corpus: the needle-in-a-haystack probe\n"
        "(Wu et al. 2024). The needle sentence is put into the haystack at --depth (a fraction of it),\n"
        "the question follows, the model answers greedily; a head copies an answer token when the\n"
        "prompt token it attends to most lies in the needle and is that token. Its retrieval score: the\n"
        "fraction of the needle's tokens it so copied. Output: CSV (layer,head,retrieval) or JSON."));
    p.addHelpOption();
    QCommandLineOption modelOpt(QStringLiteral("model"), QStringLiteral("The model folder, .gguf file, or `bundled`."), QStringLiteral("dir"));
    QCommandLineOption corpusOpt(QStringLiteral("corpus"), QStringLiteral("A text file of prompts, one a line."), QStringLiteral("file"));
    QCommandLineOption outOpt({QStringLiteral("o"), QStringLiteral("output")},
                              QStringLiteral("OUT.csv or OUT.json (default: CSV on standard output)."), QStringLiteral("file"));
    QCommandLineOption formatOpt(QStringLiteral("format"), QStringLiteral("csv or json, where -o does not say (standard output)."),
                                 QStringLiteral("f"));
    QCommandLineOption noInductionOpt(QStringLiteral("no-induction"), QStringLiteral("Skip the induction probe."));
    QCommandLineOption needleOpt(QStringLiteral("needle"), QStringLiteral("The needle sentence (retrieval probe)."), QStringLiteral("text"));
    QCommandLineOption questionOpt(QStringLiteral("question"), QStringLiteral("The question after the haystack."), QStringLiteral("text"));
    QCommandLineOption haystackOpt(QStringLiteral("haystack"), QStringLiteral("A text file: the haystack."), QStringLiteral("file"));
    QCommandLineOption depthOpt(QStringLiteral("depth"), QStringLiteral("Where the needle goes, 0 (start) to 1 (end); default 0.5."),
                                QStringLiteral("x"), QStringLiteral("0.5"));
    QCommandLineOption answerOpt(QStringLiteral("answer-tokens"),
                                 QStringLiteral("Tokens of the answer (default: as many as the needle has)."), QStringLiteral("n"),
                                 QStringLiteral("0"));
    p.addOptions({modelOpt, corpusOpt, outOpt, formatOpt, noInductionOpt, needleOpt, questionOpt, haystackOpt, depthOpt, answerOpt});
    if (!p.parse(args))
        return fail("heads", p.errorText().toStdString(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    const bool probe = p.isSet(needleOpt) || p.isSet(questionOpt) || p.isSet(haystackOpt);
    if (probe && p.isSet(corpusOpt))
        return fail("heads", "--corpus or --needle (the retrieval probe), not both", 2);
    const std::vector<const QCommandLineOption *> needed =
        probe ? std::vector<const QCommandLineOption *>{&modelOpt, &needleOpt, &questionOpt, &haystackOpt}
              : std::vector<const QCommandLineOption *>{&modelOpt, &corpusOpt};
    for (const QCommandLineOption *o : needed)
        if (!p.isSet(*o))
            return fail("heads", "--" + o->names().last().toStdString() + ": missing", 2);
    const QString out = p.value(outOpt);
    QString format = p.value(formatOpt).toLower();
    if (!out.isEmpty() && out != QLatin1String("-")) {
        const QString suffix = QFileInfo(out).suffix().toLower();
        if (suffix != QLatin1String("csv") && suffix != QLatin1String("json"))
            return fail("heads", "-o " + out.toStdString() + ": .csv or .json", 2);
        if (!format.isEmpty() && format != suffix)
            return fail("heads", "--format " + format.toStdString() + " disagrees with -o " + out.toStdString(), 2);
        format = suffix;
    }
    if (format.isEmpty())
        format = QStringLiteral("csv");
    if (format != QLatin1String("csv") && format != QLatin1String("json"))
        return fail("heads", "--format: csv or json, not " + format.toStdString(), 2);

    if (probe) {
        NeedleRequest nreq;
        bool ok = false;
        nreq.depth = p.value(depthOpt).toDouble(&ok);
        if (!ok || !(nreq.depth >= 0 && nreq.depth <= 1))
            return fail("heads", "--depth " + p.value(depthOpt).toStdString() + ": a number from 0 to 1", 2);
        nreq.answerTokens = p.value(answerOpt).toInt(&ok);
        if (!ok || nreq.answerTokens < 0)
            return fail("heads", "--answer-tokens " + p.value(answerOpt).toStdString() + ": a count, 0 or more", 2);
        nreq.needle = p.value(needleOpt).toStdString();
        nreq.question = p.value(questionOpt).toStdString();
        if (Status st = readHaystackFile(p.value(haystackOpt).toStdString(), nreq.haystack); !st)
            return fail("heads", st.message, exitCodeFor(st));
        std::unique_ptr<Model> m;
        if (Status st = openModelSource(p.value(modelOpt), m); !st)
            return fail("heads", st.message, exitCodeFor(st));
        NeedleProbe res;
        if (Status st = needleProbe(*m, nreq, res); !st)
            return fail("heads", st.message, exitCodeFor(st));
        std::fprintf(stderr, "attnviz heads: probe of %d tokens, the needle at tokens %d-%d; answer \"%s\" (%d of %d tokens from the needle)\n",
                     res.promptTokens, res.needleBegin, res.needleEnd - 1, res.answerText.c_str(), res.answerFromNeedle,
                     int(res.answer.size()));
        std::string error;
        if (!writeOutput(out, needleOutput(*m, res, format), error))
            return fail("heads", error, 1);
        return 0;
    }

    CorpusRequest req;
    if (Status st = readCorpusFile(p.value(corpusOpt).toStdString(), req.prompts); !st)
        return fail("heads", st.message, exitCodeFor(st));
    std::unique_ptr<Model> m;
    if (Status st = openModelSource(p.value(modelOpt), m); !st)
        return fail("heads", st.message, exitCodeFor(st));
    req.induction = !p.isSet(noInductionOpt);
    for (std::string &prompt : req.prompts)
        if (prompt.find_first_not_of(" \t") == std::string::npos)
            prompt.clear();
    if (isatty(fileno(stderr))) // progress for a person at a terminal, not in a log
        req.progress = [](int done, int total) {
            if (done == total || done % 16 == 0)
                std::fprintf(stderr, "\rattnviz heads: %d of %d lines", done, total);
            if (done == total)
                std::fputc('\n', stderr);
        };
    CorpusHeadScores res;
    if (Status st = corpusHeadScores(*m, req, res); !st)
        return fail("heads", st.message, exitCodeFor(st));

    if (res.cut > 0)
        std::fprintf(stderr, "attnviz heads: note: %d of %d prompts cut: %s (the first shown)\n", res.cut, res.prompts,
                     res.cutReason.c_str());
    const std::vector<NamedScore> scores = {{"previous", &res.previousToken},
                                            {"first", &res.firstToken},
                                            {"same", &res.sameToken},
                                            {"self", &res.self}};
    const int layers = int(res.previousToken.mean.rows()), heads = int(res.previousToken.mean.cols());
    auto number = [](double v) { return std::isfinite(v) ? QString::number(v, 'g', 9) : QString(); };
    QByteArray bytes;
    if (format == QLatin1String("csv")) {
        bytes = "layer,head,score,mean,spread,prompts\n";
        for (int l = 0; l < layers; ++l)
            for (int h = 0; h < heads; ++h) {
                for (const NamedScore &s : scores)
                    bytes += QStringLiteral("%1,%2,%3,%4,%5,%6\n")
                                 .arg(l)
                                 .arg(h)
                                 .arg(QLatin1String(s.name), number(s.score->mean(l, h)), number(s.score->spread(l, h)))
                                 .arg(s.score->count(l, h))
                                 .toUtf8();
                if (res.induction.size() > 0)
                    bytes += QStringLiteral("%1,%2,induction,%3,,\n").arg(l).arg(h).arg(number(res.induction(l, h))).toUtf8();
            }
    } else {
        auto grid = [&](const Mat<double> &g) {
            QJsonArray rows;
            for (int l = 0; l < int(g.rows()); ++l) {
                QJsonArray row;
                for (int h = 0; h < int(g.cols()); ++h)
                    row.append(ui::jsonNumber(g(l, h)));
                rows.append(row);
            }
            return rows;
        };
        QJsonObject o{{QStringLiteral("model"), QString::fromStdString(m->info().name)},
                      {QStringLiteral("prompts"), res.prompts},
                      {QStringLiteral("tokens"), double(res.tokens)},
                      {QStringLiteral("layers"), layers},
                      {QStringLiteral("heads"), heads}};
        QJsonObject all;
        for (const NamedScore &s : scores) {
            QJsonArray counts;
            for (int l = 0; l < layers; ++l) {
                QJsonArray row;
                for (int h = 0; h < heads; ++h)
                    row.append(s.score->count(l, h));
                counts.append(row);
            }
            all.insert(QLatin1String(s.name), QJsonObject{{QStringLiteral("mean"), grid(s.score->mean)},
                                                          {QStringLiteral("spread"), grid(s.score->spread)},
                                                          {QStringLiteral("prompts"), counts}});
        }
        if (res.induction.size() > 0)
            all.insert(QStringLiteral("induction"), QJsonObject{{QStringLiteral("mean"), grid(res.induction)}});
        o.insert(QStringLiteral("scores"), all);
        bytes = QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n';
    }
    std::string error;
    if (!writeOutput(out, bytes, error))
        return fail("heads", error, 1);
    return 0;
}

} // namespace attnviz::cli
