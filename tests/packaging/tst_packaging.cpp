// SPDX-License-Identifier: GPL-3.0-or-later
// What the package installs, checked in the build tree: the desktop entry and the AppStream
// metainfo pass Debian's validators, the session MIME type registers its glob, the icons rendered
// from the SVG have the sizes they claim (PNG, ICO, ICNS), and the man page renders cleanly and
// agrees with the program's --help. A validator that is not installed is a QSKIP naming the Debian
// package; `bash packaging/dev.sh test` installs them all.
#include "testpaths.h"
#include <QDir>
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtEndian>
#include <QtTest>

#include <utility>

namespace {

const QString kPackagingDir = QString::fromUtf8(ATTNVIZ_BUILD_PATH("/packaging"));
const QString kAppId = QStringLiteral(ATTNVIZ_APP_ID);

struct Run {
    int code = -1;
    QByteArray out, err;
};

Run run(const QString &program, const QStringList &args, const QStringList &extraEnv = {})
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    for (const QString &kv : extraEnv)
        env.insert(kv.section(QLatin1Char('='), 0, 0), kv.section(QLatin1Char('='), 1));
    p.setProcessEnvironment(env);
    p.start(program, args);
    Run r;
    if (!p.waitForFinished(120000))
        return r;
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The commands listed under "Commands:" in `attnviz --help`, as genman.cmake reads them.
QStringList commands(const QByteArray &topHelp)
{
    QStringList verbs;
    bool inCommands = false;
    static const QRegularExpression verbLine(QStringLiteral("^  ([a-z][a-z0-9-]*)( |$)"));
    for (const QString &line : QString::fromUtf8(topHelp).split(QLatin1Char('\n'))) {
        if (line.startsWith(QLatin1String("Commands:"))) {
            inCommands = true;
        } else if (inCommands && line.isEmpty()) {
            inCommands = false;
        } else if (inCommands) {
            const auto m = verbLine.match(line);
            if (m.hasMatch() && !verbs.contains(m.captured(1)))
                verbs << m.captured(1);
        }
    }
    return verbs;
}

// roff escapes as genman.cmake writes them.
QString roffEscape(QString text)
{
    text.replace(QLatin1Char('\\'), QLatin1String("\\e"));
    text.replace(QLatin1Char('-'), QLatin1String("\\-"));
    // The typographic characters as genman.cmake's roff_escape names them.
    static const std::pair<const char *, const char *> names[] = {
        {"×", "\\(mu"}, {"—", "\\(em"}, {"–", "\\(en"}, {"≤", "\\(<="}, {"≥", "\\(>="},
        {"→", "\\(->"}, {"…", "..."}, {"·", "\\(pc"}, {"√", "\\(sr"}, {"−", "\\(mi"}};
    for (const auto &[from, to] : names)
        text.replace(QString::fromUtf8(from), QLatin1String(to));
    return text;
}

QStringList longOptions(const QString &text)
{
    QStringList opts;
    static const QRegularExpression re(QStringLiteral("(?<![\\w-])--([a-z][a-z0-9-]*)"));
    for (auto it = re.globalMatch(text); it.hasNext();)
        opts << it.next().captured(1);
    opts.removeDuplicates();
    return opts;
}

quint32 be32(const QByteArray &b, int at) { return qFromBigEndian<quint32>(b.constData() + at); }
quint32 le32(const QByteArray &b, int at) { return qFromLittleEndian<quint32>(b.constData() + at); }
quint16 le16(const QByteArray &b, int at) { return qFromLittleEndian<quint16>(b.constData() + at); }

} // namespace

class TestPackaging : public QObject {
    Q_OBJECT
private slots:
    void desktopEntryValidates();
    void metainfoValidates();
    void mimeTypeRegistersGlob();
    void pngIcons_data();
    void pngIcons();
    void icoIcon();
    void icnsIcon();
    void manPageRendersCleanly();
    void manPageHasEveryCommandsHelp();
    void manPageProseMatchesHelp();
};

void TestPackaging::desktopEntryValidates()
{
    const QString path = kPackagingDir + QLatin1Char('/') + kAppId + QStringLiteral(".desktop");
    const QByteArray text = readAll(path);
    QVERIFY2(!text.isEmpty(), qPrintable(path));
    QVERIFY(text.contains("\nExec=attnviz %f\n"));
    QVERIFY(text.contains("\nIcon=" + kAppId.toUtf8() + '\n'));
    QVERIFY(text.contains("\nMimeType=application/x-attnviz-session;\n"));
    const QString tool = QStandardPaths::findExecutable(QStringLiteral("desktop-file-validate"));
    if (tool.isEmpty())
        QSKIP("desktop-file-validate not found (Debian package desktop-file-utils)");
    const Run r = run(tool, {path});
    // It prints nothing for a valid file; hints and errors both mean something to fix.
    QVERIFY2(r.code == 0 && r.out.trimmed().isEmpty(), (r.out + r.err).constData());
}

void TestPackaging::metainfoValidates()
{
    const QString path = kPackagingDir + QLatin1Char('/') + kAppId + QStringLiteral(".metainfo.xml");
    const QByteArray text = readAll(path);
    QVERIFY2(!text.isEmpty(), qPrintable(path));
    QVERIFY(text.contains("<release version=\"" ATTNVIZ_VERSION "\""));
    QVERIFY(text.contains("<launchable type=\"desktop-id\">" + kAppId.toUtf8() + ".desktop</launchable>"));
    const QString tool = QStandardPaths::findExecutable(QStringLiteral("appstreamcli"));
    if (tool.isEmpty())
        QSKIP("appstreamcli not found (Debian package appstream)");
    const Run r = run(tool, {QStringLiteral("validate"), QStringLiteral("--no-net"), QStringLiteral("--pedantic"), path});
    QVERIFY2(r.code == 0, (r.out + r.err).constData());
    // --pedantic: even infos and pedantic remarks ("I: id:line: tag") count; there must be none.
    static const QRegularExpression remark(QStringLiteral("^[IWEP]: "), QRegularExpression::MultilineOption);
    QVERIFY2(!remark.match(QString::fromUtf8(r.out)).hasMatch(), r.out.constData());
}

void TestPackaging::mimeTypeRegistersGlob()
{
    const QString tool = QStandardPaths::findExecutable(QStringLiteral("update-mime-database"));
    if (tool.isEmpty())
        QSKIP("update-mime-database not found (Debian package shared-mime-info)");
    // A private data directory DATA/mime/packages, on XDG_DATA_DIRS so the tool does not warn.
    QTemporaryDir data;
    const QDir mime(data.filePath(QStringLiteral("mime")));
    QVERIFY(QDir().mkpath(mime.filePath(QStringLiteral("packages"))));
    QVERIFY(QFile::copy(QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/packaging/linux/attnviz-mime.xml")),
                        mime.filePath(QStringLiteral("packages/attnviz.xml"))));
    const Run r = run(tool, {mime.path()}, {QStringLiteral("XDG_DATA_DIRS=") + data.path()});
    // Any complaint about the XML comes on stderr.
    QVERIFY2(r.code == 0 && r.err.isEmpty(), r.err.constData());
    const QByteArray globs = readAll(mime.filePath(QStringLiteral("globs2")));
    QVERIFY2(globs.contains(":application/x-attnviz-session:*.attnviz"), globs.constData());
    const QByteArray subclasses = readAll(mime.filePath(QStringLiteral("subclasses")));
    QVERIFY(subclasses.contains("application/x-attnviz-session application/json"));
}

void TestPackaging::pngIcons_data()
{
    QTest::addColumn<int>("size");
    for (int size : {16, 22, 24, 32, 48, 64, 128, 256, 512, 1024})
        QTest::addRow("%dpx", size) << size;
}

void TestPackaging::pngIcons()
{
    QFETCH(int, size);
    const QString path = kPackagingDir + QStringLiteral("/icons/attnviz-%1.png").arg(size);
    QImage image(path);
    QVERIFY2(!image.isNull(), qPrintable(path));
    QCOMPARE(image.size(), QSize(size, size));
    QVERIFY(image.hasAlphaChannel());
    // Transparent corners (the rounded square), an opaque middle, and the lit cell of the first
    // query (amber: red high, blue low) where the drawing puts it.
    QCOMPARE(qAlpha(image.pixel(0, 0)), 0);
    QCOMPARE(qAlpha(image.pixel(size / 2, size / 2)), 255);
    const QRgb firstCell = image.pixel(size * 59 / 256, size * 59 / 256);
    QVERIFY2(qRed(firstCell) > 200 && qBlue(firstCell) < 100, qPrintable(QString::number(firstCell, 16)));
    const QRgb masked = image.pixel(size * 197 / 256, size * 59 / 256);
    QVERIFY(qRed(masked) < 150);
}

void TestPackaging::icoIcon()
{
    const QByteArray ico = readAll(kPackagingDir + QStringLiteral("/icons/attnviz.ico"));
    QVERIFY(ico.size() > 6);
    QCOMPARE(le16(ico, 0), quint16(0));
    QCOMPARE(le16(ico, 2), quint16(1));
    const int count = le16(ico, 4);
    QCOMPARE(count, 6);
    QList<int> sizes;
    for (int i = 0; i < count; ++i) {
        const int entry = 6 + 16 * i;
        const int w = quint8(ico[entry]) ? quint8(ico[entry]) : 256;
        const quint32 bytes = le32(ico, entry + 8), offset = le32(ico, entry + 12);
        QVERIFY(offset + bytes <= quint32(ico.size()));
        const QImage image = QImage::fromData(ico.mid(int(offset), int(bytes)), "PNG");
        QCOMPARE(image.size(), QSize(w, w));
        sizes << w;
    }
    QCOMPARE(sizes, (QList<int>{16, 24, 32, 48, 64, 256}));
}

void TestPackaging::icnsIcon()
{
    const QByteArray icns = readAll(kPackagingDir + QStringLiteral("/icons/attnviz.icns"));
    QVERIFY(icns.startsWith("icns"));
    QCOMPARE(be32(icns, 4), quint32(icns.size()));
    const QHash<QByteArray, int> expected = {{"icp4", 16}, {"icp5", 32},  {"icp6", 64},   {"ic07", 128},
                                             {"ic08", 256}, {"ic09", 512}, {"ic10", 1024}, {"ic11", 32},
                                             {"ic12", 64},  {"ic13", 256}, {"ic14", 512}};
    QSet<QByteArray> seen;
    for (int at = 8; at < icns.size();) {
        QVERIFY(at + 8 <= icns.size());
        const QByteArray type = icns.mid(at, 4);
        const quint32 length = be32(icns, at + 4);
        QVERIFY(length > 8 && at + length <= quint32(icns.size()));
        QVERIFY2(expected.contains(type), type.constData());
        const QImage image = QImage::fromData(icns.mid(at + 8, int(length) - 8), "PNG");
        QCOMPARE(image.width(), expected.value(type));
        seen.insert(type);
        at += int(length);
    }
    QCOMPARE(seen.size(), expected.size());
}

void TestPackaging::manPageRendersCleanly()
{
    const QString page = kPackagingDir + QStringLiteral("/attnviz.1");
    QVERIFY2(QFile::exists(page), qPrintable(page));
    const QString groff = QStandardPaths::findExecutable(QStringLiteral("groff"));
    if (groff.isEmpty())
        QSKIP("groff not found (Debian package groff-base)");
    // -ww: every warning; -z: no output, only the diagnostics.
    const Run r = run(groff, {QStringLiteral("-man"), QStringLiteral("-Tutf8"), QStringLiteral("-ww"),
                              QStringLiteral("-z"), page});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.err.isEmpty(), r.err.constData());
}

void TestPackaging::manPageHasEveryCommandsHelp()
{
    const QString page = QString::fromUtf8(readAll(kPackagingDir + QStringLiteral("/attnviz.1")));
    QVERIFY(!page.isEmpty());
    QVERIFY(page.contains(QStringLiteral("\"attnviz " ATTNVIZ_VERSION "\"")));
    const Run top = run(QString::fromUtf8(ATTNVIZ_BINARY), {QStringLiteral("--help")});
    QCOMPARE(top.code, 0);
    const QStringList verbs = commands(top.out);
    QVERIFY(verbs.contains(QStringLiteral("compute")));
    static const QRegularExpression usage(QStringLiteral("Usage: [^ \n]*attnviz"));
    for (const QString &verb : verbs) {
        QVERIFY2(page.contains(QStringLiteral(".SS \"attnviz %1\"\n").arg(verb)), qPrintable(verb));
        const Run help = run(QString::fromUtf8(ATTNVIZ_BINARY), {verb, QStringLiteral("--help")});
        QCOMPARE(help.code, 0);
        // Every line of the command's help, as the page must carry it: an old page (a help text
        // changed without the page being regenerated) fails here.
        QString text = QString::fromUtf8(help.out);
        text.replace(usage, QStringLiteral("Usage: attnviz"));
        if (!QRegularExpression(QStringLiteral("Usage: attnviz %1( |\n|$)").arg(verb)).match(text).hasMatch())
            text.replace(QLatin1String("Usage: attnviz"), QStringLiteral("Usage: attnviz ") + verb);
        for (const QString &line : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts))
            QVERIFY2(page.contains(roffEscape(line)), qPrintable(verb + QStringLiteral(": ") + line));
    }
    // And no section for a command that no longer exists.
    static const QRegularExpression section(QStringLiteral("^\\.SS \"attnviz ([^\"]+)\"$"),
                                            QRegularExpression::MultilineOption);
    for (auto it = section.globalMatch(page); it.hasNext();) {
        const QString verb = it.next().captured(1);
        QVERIFY2(verbs.contains(verb), qPrintable(verb));
    }
}

void TestPackaging::manPageProseMatchesHelp()
{
    // The prose around COMMANDS is written by hand: every command it runs in EXAMPLES must exist,
    // and every --option it names must be an option of that command (or, outside EXAMPLES, of
    // some command or of attnviz itself).
    QString page = QString::fromUtf8(readAll(kPackagingDir + QStringLiteral("/attnviz.1")));
    QVERIFY(!page.isEmpty());
    const int commandsAt = page.indexOf(QLatin1String("\n.SH COMMANDS\n"));
    const int afterCommands = page.indexOf(QLatin1String("\n.SH "), commandsAt + 1);
    QVERIFY(commandsAt > 0 && afterCommands > commandsAt);
    QString prose = page.left(commandsAt) + page.mid(afterCommands);
    prose.replace(QLatin1String("\\-"), QLatin1String("-"));

    const Run top = run(QString::fromUtf8(ATTNVIZ_BINARY), {QStringLiteral("--help")});
    QCOMPARE(top.code, 0);
    QHash<QString, QStringList> optionsOf;
    QStringList allOptions = {QStringLiteral("version"), QStringLiteral("help")};
    for (const QString &verb : commands(top.out)) {
        const Run help = run(QString::fromUtf8(ATTNVIZ_BINARY), {verb, QStringLiteral("--help")});
        QCOMPARE(help.code, 0);
        optionsOf[verb] = longOptions(QString::fromUtf8(help.out));
        allOptions += optionsOf[verb];
    }

    int exampleLines = 0;
    static const QRegularExpression invocation(QStringLiteral("^attnviz ([a-z][a-z0-9-]*)(.*)$"),
                                               QRegularExpression::MultilineOption);
    for (auto it = invocation.globalMatch(prose); it.hasNext();) {
        const auto m = it.next();
        const QString verb = m.captured(1);
        QVERIFY2(optionsOf.contains(verb), qPrintable(QStringLiteral("the man page runs 'attnviz %1', which --help does not list").arg(verb)));
        for (const QString &opt : longOptions(m.captured(2)))
            QVERIFY2(optionsOf[verb].contains(opt), qPrintable(QStringLiteral("attnviz %1 has no --%2").arg(verb, opt)));
        ++exampleLines;
    }
    QVERIFY(exampleLines >= 3);
    for (const QString &opt : longOptions(prose))
        QVERIFY2(allOptions.contains(opt), qPrintable(QStringLiteral("the man page names --%1, which no --help lists").arg(opt)));
}

QTEST_GUILESS_MAIN(TestPackaging)
#include "tst_packaging.moc"
