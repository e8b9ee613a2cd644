// SPDX-License-Identifier: GPL-3.0-or-later
// attnviz_iconforge: renders the application icon from its SVG at build time, so the bitmaps can
// never drift from the drawing.
//
//   attnviz_iconforge ICON.svg OUTDIR
//
// writes OUTDIR/attnviz-N.png for N in 16 22 24 32 48 64 128 256 512 1024 (freedesktop hicolor sizes,
// plus the large ones the macOS icon needs), OUTDIR/attnviz.ico (Windows: 16…256, PNG-compressed
// entries, readable since Windows Vista) and OUTDIR/attnviz.icns (macOS: PNG entries icp4…ic10).
// Both containers are written here by hand; their layouts are small and documented:
//   ICO:  ICONDIR {u16 0, u16 1, u16 count} + count × ICONDIRENTRY {u8 w, u8 h (0 = 256), u8 0, u8 0,
//         u16 planes 1, u16 bpp 32, u32 bytes, u32 offset}, all little-endian, then the PNG data.
//   ICNS: "icns" + u32 total length, then per entry a 4-byte type + u32 length (incl. 8-byte header),
//         big-endian, then the PNG data.
// Exit 1 with one line on stderr if the SVG cannot be read or a file cannot be written.

#include <QBuffer>
#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QSvgRenderer>
#include <QtEndian>

#include <cstdio>
#include <utility>
#include <vector>

namespace {

QByteArray renderPng(QSvgRenderer &svg, int size)
{
    QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    {
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.setRenderHint(QPainter::SmoothPixmapTransform);
        svg.render(&painter, QRectF(0, 0, size, size));
    }
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    image.convertToFormat(QImage::Format_ARGB32).save(&buffer, "PNG");
    return png;
}

void appendLE16(QByteArray &out, quint16 v)
{
    char b[2];
    qToLittleEndian(v, b);
    out.append(b, 2);
}

void appendLE32(QByteArray &out, quint32 v)
{
    char b[4];
    qToLittleEndian(v, b);
    out.append(b, 4);
}

void appendBE32(QByteArray &out, quint32 v)
{
    char b[4];
    qToBigEndian(v, b);
    out.append(b, 4);
}

QByteArray makeIco(const std::vector<std::pair<int, QByteArray>> &pngs)
{
    QByteArray out;
    appendLE16(out, 0);
    appendLE16(out, 1);
    appendLE16(out, quint16(pngs.size()));
    quint32 offset = quint32(6 + 16 * pngs.size());
    for (const auto &[size, png] : pngs) {
        out.append(char(size >= 256 ? 0 : size));
        out.append(char(size >= 256 ? 0 : size));
        out.append(char(0));
        out.append(char(0));
        appendLE16(out, 1);
        appendLE16(out, 32);
        appendLE32(out, quint32(png.size()));
        appendLE32(out, offset);
        offset += quint32(png.size());
    }
    for (const auto &entry : pngs)
        out.append(entry.second);
    return out;
}

QByteArray makeIcns(const std::vector<std::pair<QByteArray, QByteArray>> &entries)
{
    QByteArray body;
    for (const auto &[type, png] : entries) {
        body.append(type);
        appendBE32(body, quint32(png.size() + 8));
        body.append(png);
    }
    QByteArray out("icns");
    appendBE32(out, quint32(body.size() + 8));
    out.append(body);
    return out;
}

bool writeFile(const QString &path, const QByteArray &data)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(data) != data.size()) {
        std::fprintf(stderr, "attnviz_iconforge: cannot write %s (%s)\n", qPrintable(path), qPrintable(f.errorString()));
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fputs("usage: attnviz_iconforge ICON.svg OUTDIR\n", stderr);
        return 2;
    }
    const QString svgPath = QString::fromLocal8Bit(argv[1]);
    const QDir outDir(QString::fromLocal8Bit(argv[2]));
    QSvgRenderer svg(svgPath);
    if (!svg.isValid()) {
        std::fprintf(stderr, "attnviz_iconforge: cannot read %s as SVG\n", qPrintable(svgPath));
        return 1;
    }
    if (!outDir.exists() && !QDir().mkpath(outDir.path())) {
        std::fprintf(stderr, "attnviz_iconforge: cannot create %s\n", qPrintable(outDir.path()));
        return 1;
    }

    const int sizes[] = {16, 22, 24, 32, 48, 64, 128, 256, 512, 1024};
    std::vector<std::pair<int, QByteArray>> pngs;
    for (int size : sizes) {
        QByteArray png = renderPng(svg, size);
        if (png.isEmpty() || !writeFile(outDir.filePath(QStringLiteral("attnviz-%1.png").arg(size)), png))
            return 1;
        pngs.emplace_back(size, std::move(png));
    }
    auto png = [&](int size) {
        for (const auto &entry : pngs)
            if (entry.first == size)
                return entry.second;
        return QByteArray();
    };

    std::vector<std::pair<int, QByteArray>> ico;
    for (int size : {16, 24, 32, 48, 64, 256})
        ico.emplace_back(size, png(size));
    // icp4/icp5/icp6: 16/32/64; ic07/ic08/ic09: 128/256/512; ic11/ic12/ic13/ic14/ic10: the @2x
    // variants of 16/32/128/256/512.
    const std::vector<std::pair<QByteArray, QByteArray>> icns = {
        {"icp4", png(16)},  {"icp5", png(32)},  {"icp6", png(64)},  {"ic07", png(128)},
        {"ic08", png(256)}, {"ic09", png(512)}, {"ic11", png(32)},  {"ic12", png(64)},
        {"ic13", png(256)}, {"ic14", png(512)}, {"ic10", png(1024)},
    };
    if (!writeFile(outDir.filePath(QStringLiteral("attnviz.ico")), makeIco(ico))
        || !writeFile(outDir.filePath(QStringLiteral("attnviz.icns")), makeIcns(icns)))
        return 1;
    return 0;
}
