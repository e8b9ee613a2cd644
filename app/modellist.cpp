// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz model list`: the models already on this machine (core: modelstores.h) as a table or JSON,
// and the folders the user adds to the stores searched (--add-folder / --remove-folder, kept in the
// settings the window's Model ▸ On this computer reads).
#include "commands.h"
#include "output.h"

#include "attnviz/fileio.h"
#include "attnviz/modelstores.h"
#include "localmodels.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cstdio>

namespace attnviz::cli {

namespace {

QString q(const std::string &s) { return QString::fromStdString(s); }

QJsonObject modelJson(const LocalModel &m)
{
    return {{QStringLiteral("name"), q(m.name)},
            {QStringLiteral("spec"), q(m.spec)},
            {QStringLiteral("path"), q(m.path)},
            {QStringLiteral("store"), QString::fromLatin1(modelStoreName(m.store))},
            {QStringLiteral("root"), q(m.root)},
            {QStringLiteral("format"), q(m.format)},
            {QStringLiteral("family"), q(m.family)},
            {QStringLiteral("parameters"), double(m.parameters)},
            {QStringLiteral("bytes"), double(m.bytes)},
            {QStringLiteral("precision"), q(m.precision)},
            {QStringLiteral("supported"), m.supported},
            {QStringLiteral("reason"), q(m.reason)}};
}

// What to type for --model: the spec of a Hugging Face or Ollama model, else its path.
std::string opensAs(const LocalModel &m) { return m.spec.empty() ? m.path : m.spec; }

void printTable(const StoreScan &scan)
{
    struct Row {
        std::string cells[6];
        const LocalModel *m;
    };
    std::vector<Row> rows{{{"MODEL", "FAMILY", "PARAMETERS", "SIZE", "PRECISION", "WHERE"}, nullptr}};
    for (const LocalModel &m : scan.models)
        rows.push_back({{printable(opensAs(m), 200), m.family.empty() ? "-" : printable(m.family, 64),
                         m.parameters ? describeParameters(m.parameters) : "-", describeBytes(m.bytes),
                         m.precision.empty() ? "-" : printable(m.precision, 64),
                         std::string(modelStoreName(m.store)) + " " + printable(m.root, 200)},
                        &m});
    size_t width[6] = {};
    for (const Row &r : rows)
        for (int c = 0; c < 6; ++c)
            width[c] = std::max(width[c], r.cells[c].size());
    for (const Row &r : rows) {
        std::string line;
        for (int c = 0; c < 6; ++c)
            line += c == 5 ? r.cells[c] : r.cells[c] + std::string(width[c] - r.cells[c].size() + 2, ' ');
        std::printf("%s\n", line.c_str());
        if (r.m && !r.m->supported)
            std::printf("    cannot compute: %s\n", printable(r.m->reason).c_str());
    }
}

} // namespace

int modelList(const QStringList &args)
{
    // The window's settings (organization "attnviz"), also when the command line set no organization.
    if (QCoreApplication::organizationName().isEmpty())
        QCoreApplication::setOrganizationName(QStringLiteral("attnviz"));
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Lists the models on this computer: the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub, else\n"
        "~/.cache/huggingface/hub), Ollama ($OLLAMA_MODELS, else ~/.ollama/models, and\n"
        "/usr/share/ollama/.ollama/models), LM Studio (~/.lmstudio/models, ~/.cache/lm-studio/models) and\n"
        "the folders added with --add-folder. The MODEL column is what --model, model info|run,\n"
        "tokenize --model, export --model and bench --model take: hf:ORG/NAME, ollama:NAME:TAG or a path."));
    p.addHelpOption();
    QCommandLineOption jsonOpt(QStringLiteral("json"), QStringLiteral("One JSON object instead of a table."));
    QCommandLineOption folderOpt(QStringLiteral("folder"), QStringLiteral("Also scan this folder (this time only; repeatable)."),
                                 QStringLiteral("dir"));
    QCommandLineOption addOpt(QStringLiteral("add-folder"), QStringLiteral("Add a folder to the ones always scanned (also by the window)."),
                              QStringLiteral("dir"));
    QCommandLineOption removeOpt(QStringLiteral("remove-folder"), QStringLiteral("Remove a folder added with --add-folder."),
                                 QStringLiteral("dir"));
    p.addOptions({jsonOpt, folderOpt, addOpt, removeOpt});
    if (!p.parse(args))
        return fail("model list", p.errorText().toStdString(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    if (!p.positionalArguments().isEmpty())
        return fail("model list", "takes no arguments (folders are given with --folder DIR)", 2);
    for (const QString &f : p.values(folderOpt) + p.values(addOpt))
        if (!QFileInfo(f).isDir())
            return fail("model list", f.toStdString() + ": not a folder", 2);
    // Every folder to remove is checked before anything is written: a bad argument leaves the
    // settings as they were (the folders added by the same command count as added).
    const QStringList added = userModelFolders();
    QStringList afterAdding = added;
    for (const QString &f : p.values(addOpt))
        afterAdding << QDir::cleanPath(QFileInfo(f).absoluteFilePath());
    for (const QString &f : p.values(removeOpt))
        if (!afterAdding.contains(QDir::cleanPath(QFileInfo(f).absoluteFilePath())) && !afterAdding.contains(f))
            return fail(
                "model list",
                f.toStdString() + ": not one of the added folders (" +
                    (added.isEmpty() ? std::string("none is added") : added.join(QStringLiteral(", ")).toStdString()) +
                    "); nothing changed",
                2);
    for (const QString &f : p.values(addOpt))
        if (addUserModelFolder(f))
            std::fprintf(stderr, "attnviz model list: added %s\n", qPrintable(QDir::cleanPath(QFileInfo(f).absoluteFilePath())));
    for (const QString &f : p.values(removeOpt))
        removeUserModelFolder(f);
    const std::vector<StoreRoot> roots = localModelRoots(p.values(folderOpt));
    const StoreScan scan = scanModelStores(roots);
    if (p.isSet(jsonOpt)) {
        QJsonArray models, rootList, problems;
        for (const LocalModel &m : scan.models)
            models.append(modelJson(m));
        for (const StoreRoot &r : roots)
            rootList.append(QJsonObject{{QStringLiteral("store"), QString::fromLatin1(modelStoreName(r.store))},
                                        {QStringLiteral("path"), q(r.path)},
                                        {QStringLiteral("exists"), QFileInfo(q(r.path)).isDir()}});
        for (const std::string &s : scan.problems)
            problems.append(q(s));
        const QByteArray b = QJsonDocument(QJsonObject{{QStringLiteral("roots"), rootList},
                                                       {QStringLiteral("models"), models},
                                                       {QStringLiteral("problems"), problems}})
                                 .toJson(QJsonDocument::Indented);
        std::fwrite(b.constData(), 1, size_t(b.size()), stdout);
        return 0;
    }
    for (const std::string &s : scan.problems)
        std::fprintf(stderr, "attnviz model list: %s\n", printable(s).c_str());
    if (scan.models.empty()) {
        std::printf("No models found. Looked in:\n");
        for (const StoreRoot &r : roots)
            std::printf("  %-13s %s%s\n", modelStoreName(r.store), printable(r.path, 400).c_str(),
                        QFileInfo(q(r.path)).isDir() ? "" : "  (missing)");
        return 0;
    }
    printTable(scan);
    return 0;
}

} // namespace attnviz::cli
