// SPDX-License-Identifier: GPL-3.0-or-later
#include "commands.h"

#include <QCoreApplication>
#include <QTextStream>

#include <cstdio>

namespace {

void printUsage()
{
    std::fputs("Usage: attnviz <command> [options]\n"
               "\n"
               "Commands:\n"
               "  compute CASE.json [-o RESULT.json]   compute every attention stage of a case file\n"
               "  bench [--sizes ...] [--json]         time the attention core\n"
               "  tokenize < TEXT                      one line of tokens per input line (the app's tokenizer)\n"
               "  vectors export|info|cos|neighbours   word vector tables (see 'attnviz vectors --help')\n"
               "\n"
               "Run 'attnviz <command> --help' for the options of a command.\n",
               stdout);
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("attnviz"));
    QCoreApplication::setApplicationVersion(QStringLiteral(ATTNVIZ_VERSION));
    QStringList args = QCoreApplication::arguments();
    const QString verb = args.size() > 1 ? args.at(1) : QString();
    if (verb == QLatin1String("--version") || verb == QLatin1String("-v")) {
        std::printf("attnviz %s\n", ATTNVIZ_VERSION);
        return 0;
    }
    if (verb.isEmpty() || verb == QLatin1String("--help") || verb == QLatin1String("-h") || verb == QLatin1String("help")) {
        printUsage();
        return verb.isEmpty() ? 2 : 0;
    }
    QStringList rest = args.mid(2);
    rest.prepend(args.at(0) + QLatin1Char(' ') + verb);
    if (verb == QLatin1String("compute"))
        return attnviz::cli::compute(rest);
    if (verb == QLatin1String("bench"))
        return attnviz::cli::bench(rest);
    if (verb == QLatin1String("tokenize"))
        return attnviz::cli::tokenize(rest);
    if (verb == QLatin1String("vectors"))
        return attnviz::cli::vectors(rest);
    std::fprintf(stderr, "attnviz: unknown command '%s' (try 'attnviz --help')\n", qPrintable(verb));
    return 2;
}
