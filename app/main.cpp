// SPDX-License-Identifier: GPL-3.0-or-later
#include "commands.h"
#include "output.h"
#include "uiverbs.h"

#include <QApplication>

#include <QCoreApplication>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLibraryInfo>
#include <QTextStream>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace {

void printUsage()
{
    std::fputs("Usage: attnviz <command> [options]\n"
               "\n"
               "Commands:\n"
               "  compute CASE.json [-o RESULT.json]   compute every attention stage of a case file\n"
               "  bench [--sizes ...] [--json]         time the attention core\n"
               "  bench --ui [--sizes ...]             time keystroke -> repainted heatmap in the window\n"
               "  export --sentence TEXT --out FILE    render a view (png/svg/pdf) or its matrices (csv/npy/json),\n"
               "                                       headless\n"
               "  export --preset ID --slides DIR      a lesson as slides: PNG per step and one PDF, headless\n"
               "  tokenize < TEXT                      one line of tokens per input line (the app's tokenizer)\n"
               "  tokenize --model DIR TEXT            a model folder's tokens: id, token, bytes\n"
               "  tokenize --vocab V --merges M TEXT   GPT-2 / BERT (--wordpiece vocab.txt) subword ids as JSON\n"
               "  model info DIR | run DIR --text T    a model folder or GGUF file: facts, or attention and\n"
               "                                       predictions as JSON (see 'attnviz model --help')\n"
               "  model list [--json]                  the models on this computer: Hugging Face cache, Ollama,\n"
               "                                       LM Studio; DIR may be hf:ORG/NAME or ollama:NAME[:TAG]\n"
               "  bench --model DIR | --seeded gpt2-small|bert-base   time a model (full, incremental, memory)\n"
               "  generate --model DIR --text T --tokens N   continue a text: greedy, or sampled (--temperature,\n"
               "                                       --top-k, --top-p, --seed)\n"
               "  patch --model DIR --clean T --corrupted T --answer A --wrong B --sweep resid|heads -o OUT.json|.npy\n"
               "                                       activation patching: layers x positions or layers x heads\n"
               "  heads --model DIR --corpus FILE [-o OUT.csv|.json]   each head's role scores averaged over\n"
               "                                       a file of prompts, with their spread\n"
               "  heads --model DIR --needle TEXT --question TEXT --haystack FILE [--depth X]\n"
               "                                       the needle-in-a-haystack probe: each head's retrieval score\n"
               "  window [SESSION.attnviz] [options]   the window (also with no command, or with only a session file)\n"
               "  vectors export|info|cos|neighbours   word vector tables (see 'attnviz vectors --help')\n"
               "\n"
               "With no command (or only options such as --embeddings FILE, or a session file SESSION.attnviz)\n"
               "attnviz opens its window; it starts on the session open at the last close unless given a\n"
               "session file or --no-restore.\n"
               "\n"
               "Run 'attnviz <command> --help' for the options of a command.\n",
               stdout);
}

// The GPU backend (--backend, bench's --map-device) needs a QGuiApplication (QRhi's Vulkan instance
// or OpenGL context come from the platform plugin); everything else runs without a display.
bool wantsGpu(int argc, char **argv)
{
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = nullptr;
        if ((!std::strcmp(a, "--backend") || !std::strcmp(a, "--map-device")) && i + 1 < argc)
            v = argv[i + 1];
        else if (!std::strncmp(a, "--backend=", 10))
            v = a + 10;
        else if (!std::strncmp(a, "--map-device=", 13))
            v = a + 13;
        if (v && std::strcmp(v, "cpu") != 0)
            return true;
    }
    return false;
}

// Creating a QGuiApplication without a platform to reach aborts; only try where one is named or
// a display is set. With neither (a headless server), Qt's vkkhrdisplay plugin still gives a
// Vulkan instance for compute where the plugin is installed; elsewhere the GPU backend reports
// itself unavailable.
bool platformAvailable()
{
#if defined(Q_OS_LINUX) || defined(Q_OS_FREEBSD)
    if (std::getenv("QT_QPA_PLATFORM") || std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY"))
        return true;
    QStringList dirs = QString::fromLocal8Bit(qgetenv("QT_PLUGIN_PATH")).split(QLatin1Char(':'), Qt::SkipEmptyParts);
    dirs << QLibraryInfo::path(QLibraryInfo::PluginsPath);
    for (const QString &dir : dirs) {
        if (QFileInfo::exists(dir + QStringLiteral("/platforms/libqvkkhrdisplay.so"))) {
            qputenv("QT_QPA_PLATFORM", "vkkhrdisplay");
            return true;
        }
    }
    return false;
#else
    return true;
#endif
}

} // namespace

static int runAttnviz(int argc, char **argv)
{
    const QString verb = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QString();
    const bool benchUi = verb == QLatin1String("bench")
        && std::any_of(argv + 2, argv + argc, [](const char *a) { return qstrcmp(a, "--ui") == 0; });
    const bool isHelp = verb == QLatin1String("--help") || verb == QLatin1String("-h") || verb == QLatin1String("help")
        || verb == QLatin1String("--version") || verb == QLatin1String("-v");
    // `attnviz FILE.attnviz` (the desktop entry's `attnviz %f`) opens the window on that session.
    static const QStringList verbs = {QStringLiteral("compute"), QStringLiteral("bench"), QStringLiteral("export"),
                                      QStringLiteral("tokenize"), QStringLiteral("vectors"), QStringLiteral("window"),
                                      QStringLiteral("model"), QStringLiteral("generate"), QStringLiteral("patch"),
                                      QStringLiteral("heads"), QStringLiteral("help")};
    const bool sessionFile = !verb.isEmpty() && !verb.startsWith(QLatin1Char('-')) && !verbs.contains(verb)
        && (verb.endsWith(QLatin1String(".attnviz"), Qt::CaseInsensitive) || QFileInfo(verb).isFile());
    const bool windowVerb = verb == QLatin1String("window");
    const bool gui = verb.isEmpty() || (verb.startsWith(QLatin1Char('-')) && !isHelp) || windowVerb || sessionFile;
    // help texts and `--preset list` / `--compare list` print and quit: they need no display
    const bool helpOnly = std::any_of(argv + 1, argv + argc, [](const char *a) {
        return qstrcmp(a, "--help") == 0 || qstrcmp(a, "-h") == 0;
    }) || std::adjacent_find(argv + 1, argv + argc, [](const char *a, const char *b) {
        return (qstrcmp(a, "--preset") == 0 || qstrcmp(a, "--compare") == 0) && qstrcmp(b, "list") == 0;
    }) != argv + argc;
    // `patch -o OUT.png|.svg|.pdf` draws the sweep's heatmap with the Patching tab's own widget
    bool patchFigure = false;
    if (verb == QLatin1String("patch"))
        for (int i = 2; i < argc; ++i) {
            const bool option = (qstrcmp(argv[i], "-o") == 0 || qstrcmp(argv[i], "--output") == 0) && i + 1 < argc;
            const QString a = QString::fromLocal8Bit(argv[i]);
            const QString o = option                                     ? QString::fromLocal8Bit(argv[i + 1])
                              : a.startsWith(QLatin1String("--output=")) ? a.mid(9)
                                                                         : QString();
            const QString suffix = QFileInfo(o).suffix().toLower();
            patchFigure = patchFigure || suffix == QLatin1String("png") || suffix == QLatin1String("svg") ||
                          suffix == QLatin1String("pdf");
        }
    if (gui || benchUi || verb == QLatin1String("export") || patchFigure) {
        // Figures, the benchmark and help texts need no display: fall back to the offscreen platform.
        if ((!gui || helpOnly) && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY")
            && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
        QApplication app(argc, argv);
        QCoreApplication::setOrganizationName(QStringLiteral("attnviz"));
        QCoreApplication::setApplicationName(QStringLiteral("attnviz"));
        QCoreApplication::setApplicationVersion(QStringLiteral(ATTNVIZ_VERSION));
        QStringList args = QCoreApplication::arguments();
        if (windowVerb)
            args.removeAt(1);
        if (gui)
            return attnviz::cli::gui(args);
        QStringList rest = args.mid(2);
        rest.prepend(args.at(0) + QLatin1Char(' ') + verb);
        if (patchFigure)
            return attnviz::cli::patch(rest);
        return verb == QLatin1String("export") ? attnviz::cli::exportView(rest) : attnviz::cli::benchUi(rest);
    }

    std::unique_ptr<QCoreApplication> guiOrCore;
    if (wantsGpu(argc, argv) && platformAvailable())
        guiOrCore = std::make_unique<QGuiApplication>(argc, argv);
    else
        guiOrCore = std::make_unique<QCoreApplication>(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("attnviz"));
    QCoreApplication::setApplicationVersion(QStringLiteral(ATTNVIZ_VERSION));
    QStringList args = QCoreApplication::arguments();
    if (verb == QLatin1String("--version") || verb == QLatin1String("-v")) {
        std::printf("attnviz %s\n", ATTNVIZ_VERSION);
        return 0;
    }
    if (verb == QLatin1String("--help") || verb == QLatin1String("-h") || verb == QLatin1String("help")) {
        printUsage();
        return 0;
    }
    QStringList rest = args.mid(2);
    rest.prepend(args.at(0) + QLatin1Char(' ') + verb);
    if (verb == QLatin1String("compute"))
        return attnviz::cli::compute(rest);
    const bool withModel = std::any_of(argv + 2, argv + argc, [](const char *a) {
        return qstrcmp(a, "--model") == 0 || qstrncmp(a, "--model=", 8) == 0 || qstrcmp(a, "--seeded") == 0 ||
            qstrncmp(a, "--seeded=", 9) == 0;
    });
    if (verb == QLatin1String("bench"))
        return withModel ? attnviz::cli::benchModel(rest) : attnviz::cli::bench(rest);
    if (verb == QLatin1String("tokenize"))
        return withModel ? attnviz::cli::tokenizeWithModel(rest) : attnviz::cli::tokenize(rest);
    if (verb == QLatin1String("model"))
        return attnviz::cli::model(rest);
    if (verb == QLatin1String("vectors"))
        return attnviz::cli::vectors(rest);
    if (verb == QLatin1String("generate"))
        return attnviz::cli::generateText(rest);
    if (verb == QLatin1String("patch"))
        return attnviz::cli::patch(rest);
    if (verb == QLatin1String("heads"))
        return attnviz::cli::heads(rest);
    std::fprintf(stderr, "attnviz: unknown command '%s' (try 'attnviz --help')\n", qPrintable(verb));
    return 2;
}

int main(int argc, char **argv)
{
    // The last line of defence: readers check sizes before allocating (memorybudget.h, fileio.h),
    // but an allocation that still fails ends with one line, not an abort.
    try {
        const int code = runAttnviz(argc, argv);
        // What a verb printed may still sit in stdio's buffer: a full disk or a closed pipe shows
        // here, and the run fails with a message rather than exiting 0 with its output lost.
        std::string why;
        if (!attnviz::cli::flushStdout(why) && code == 0) // a verb that failed has said why already
            return attnviz::cli::fail("", why, 1);
        return code;
    } catch (const std::bad_alloc &) {
        std::fputs("attnviz: out of memory\n", stderr);
        return 1;
    }
}
