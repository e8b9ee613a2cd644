// SPDX-License-Identifier: GPL-3.0-or-later
#include "files/figureexport.h"
#include "files/outputfile.h"

#include "style/legibility.h"
#include "style/plotstyle.h"
#include "views/plotfit.h"

#include <qcustomplot.h>

#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QSvgGenerator>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace attnviz::ui {

namespace {

bool openSave(OutputFile &f, const QString &path, QString *error)
{
    QString why;
    if (f.open(why))
        return true;
    if (error)
        *error = QStringLiteral("cannot write %1: %2").arg(path, why);
    return false;
}

bool commit(OutputFile &f, const QString &path, QString *error)
{
    QString why;
    if (f.commit(why))
        return true;
    if (error)
        *error = QStringLiteral("cannot write %1: %2").arg(path, why);
    return false;
}

// `bytes` to `path` through OutputFile; false with the message where it cannot be written.
bool writeBytes(const QString &path, const QByteArray &bytes, QString *error)
{
    OutputFile file(path);
    if (!openSave(file, path, error))
        return false;
    if (file.device()->write(bytes) != bytes.size()) {
        if (error)
            *error = QStringLiteral("cannot write %1: %2").arg(path, file.device()->errorString());
        file.cancel();
        return false;
    }
    return commit(file, path, error);
}

// Lays the plot out at the export size once, so that the views' label thinning (done after each
// layout) sees the export geometry, not the window's; the real rendering then uses those labels.
// The texts of a figure while it is drawn, put back by restore(): each title fitted again to the
// figure's size from the whole text its view gave it (kFullTitleProperty; at the widget's size it
// was elided: "Logit len…" in a 400 px figure), held so that the views' own fitting after a layout
// leaves it; the extra title line on the first title; for a publication figure that title is one
// line of what is shown (or FigureOptions::title, or none), the fonts FigureOptions::fontPt, and
// the legibility switch that lets labels shrink further and drops the window's hints.
class FigureText {
public:
    FigureText(QCustomPlot *plot, const FigureOptions &opt, double width, double height)
    {
        setPublicationFigure(opt.publication);
        bool first = true;
        for (QCPLayoutElement *el : plot->plotLayout()->elements(true)) {
            auto *t = qobject_cast<QCPTextElement *>(el);
            if (!t)
                continue;
            m_titles.push_back({t, t->text(), t->font()});
            QString full = t->property(kFullTitleProperty).toString();
            if (full.isEmpty())
                full = t->text();
            QFont font = t->font();
            if (opt.publication && opt.fontPt > 0)
                font.setPointSizeF(opt.fontPt * 1.15);
            t->setFont(font);
            QString shown;
            if (opt.publication && first && opt.noTitle)
                shown = QString();
            else if (opt.publication && first && !opt.title.isEmpty())
                shown = wrapText(opt.title, font, width - 16);
            else if (opt.publication)
                shown = wrapText(full.section(QLatin1Char('\n'), 0, 0), font, width - 16);
            else {
                shown = wrapText(full, font, width - 16);
                const double tall = QFontMetricsF(font).lineSpacing() * (shown.count(QLatin1Char('\n')) + 1) + 8;
                if (tall > 0.3 * height) // the first line whole, wrapped, rather than the explanation
                    shown = wrapText(full.section(QLatin1Char('\n'), 0, 0), font, width - 16);
            }
            if (first && !opt.titleLine.isEmpty())
                shown += QLatin1Char('\n') + wrapText(opt.titleLine, std::max(40, opt.width / 9));
            t->setText(shown);
            t->setProperty(kTitleHeldProperty, true);
            first = false;
        }
        if (opt.publication && opt.fontPt > 0) {
            QList<QCPAxis *> axes;
            for (QCPAxisRect *r : plot->axisRects())
                axes += r->axes();
            for (QCPLayoutElement *el : plot->plotLayout()->elements(true))
                if (auto *scale = qobject_cast<QCPColorScale *>(el))
                    axes << scale->axis();
            for (QCPAxis *a : axes) {
                m_axes.push_back({a, a->tickLabelFont(), a->labelFont(), a->property("attnvizBaseFont")});
                QFont tick = a->tickLabelFont(), label = a->labelFont();
                tick.setPointSizeF(opt.fontPt);
                label.setPointSizeF(opt.fontPt);
                a->setTickLabelFont(tick);
                a->setLabelFont(label);
                if (a->property("attnvizBaseFont").isValid()) // a token axis sizes its labels from this
                    a->setProperty("attnvizBaseFont", tick);
            }
        }
    }
    void restore()
    {
        for (const Title &t : m_titles) {
            t.element->setProperty(kTitleHeldProperty, QVariant());
            t.element->setFont(t.font);
            t.element->setText(t.text);
        }
        for (const Axis &a : m_axes) {
            a.axis->setTickLabelFont(a.tick);
            a.axis->setLabelFont(a.label);
            a.axis->setProperty("attnvizBaseFont", a.base);
        }
        m_titles.clear();
        m_axes.clear();
        setPublicationFigure(false);
    }
    ~FigureText() { restore(); }

private:
    struct Title {
        QCPTextElement *element;
        QString text;
        QFont font;
    };
    struct Axis {
        QCPAxis *axis;
        QFont tick, label;
        QVariant base;
    };
    std::vector<Title> m_titles;
    std::vector<Axis> m_axes;
};

void layoutFor(QCustomPlot *plot, int w, int h)
{
    QImage scratch(std::max(1, w), std::max(1, h), QImage::Format_ARGB32_Premultiplied);
    QCPPainter p(&scratch);
    plot->toPainter(&p, w, h);
    p.end();
    emit plot->afterLayout(); // the views choose their token labels for this geometry
}

QString quoteCsv(const QString &s)
{
    QString q = s;
    q.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + q + QLatin1Char('"');
}

QString num(double v)
{
    if (std::isnan(v))
        return QStringLiteral("NaN");
    if (std::isinf(v))
        return v > 0 ? QStringLiteral("Infinity") : QStringLiteral("-Infinity");
    return QString::number(v, 'g', 9);
}


// The numbers of one export: a shape and row-major values.
struct Block {
    std::vector<int> shape;
    std::vector<float> values;
};

void appendMatrix(Block &b, const Mat<float> &m)
{
    b.values.insert(b.values.end(), m.data(), m.data() + m.size());
}

void appendMatrix(Block &b, const WeightMatrix<float> &m)
{
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        const auto row = m.storedRow(i);
        b.values.insert(b.values.end(), row.data(), row.data() + row.size());
        b.values.resize(b.values.size() + size_t(m.cols() - row.size()), 0.0f); // the cells not stored: 0
    }
}

Block blockFor(const ComputeSnapshot &s, ExportView view, int layer, int head, int query)
{
    Block b;
    const auto &seq = s.seq(layer);
    switch (view) {
    case ExportView::Weights:
    case ExportView::Lines: {
        const WeightMatrix<float> &w = s.weights(layer, head);
        b.shape = {int(w.rows()), int(w.cols())};
        appendMatrix(b, w);
        break;
    }
    case ExportView::Grid:
        b.shape = {int(seq.weights.size()), s.tq(), s.tk()};
        for (const auto &w : seq.weights)
            appendMatrix(b, w);
        break;
    case ExportView::Row: {
        const WeightMatrix<float> &w = s.weights(layer, head);
        const int q = std::clamp(query, 0, int(w.rows()) - 1);
        b.shape = {int(w.cols())};
        for (int j = 0; j < w.cols(); ++j)
            b.values.push_back(w(q, j));
        break;
    }
    case ExportView::Embeddings:
        if (seq.output.cols() == s.queryInput(layer).cols()) {
            b.shape = {2, s.tq(), int(seq.output.cols())};
            appendMatrix(b, s.queryInput(layer));
        } else {
            b.shape = {s.tq(), int(seq.output.cols())};
        }
        appendMatrix(b, seq.output);
        break;
    }
    return b;
}

QByteArray npy(const Block &b)
{
    QByteArray shape = "(";
    for (size_t i = 0; i < b.shape.size(); ++i)
        shape += QByteArray::number(b.shape[i]) + (b.shape.size() == 1 || i + 1 < b.shape.size() ? "," : "");
    shape += ")";
    QByteArray header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    const int total = 10 + int(header.size()) + 1;
    header += QByteArray((64 - total % 64) % 64, ' ');
    header += '\n';
    QByteArray out("\x93NUMPY\x01\x00", 8);
    const quint16 len = quint16(header.size());
    out += char(len & 0xff);
    out += char(len >> 8);
    out += header;
    // little-endian float32 (x86-64 / aarch64 hosts are little-endian)
    out.append(reinterpret_cast<const char *>(b.values.data()), qsizetype(b.values.size() * sizeof(float)));
    return out;
}

QJsonArray nested(const Block &b, size_t dim, size_t &offset)
{
    QJsonArray a;
    for (int i = 0; i < b.shape[dim]; ++i) {
        if (dim + 1 == b.shape.size())
            a.append(jsonNumber(double(b.values[offset++])));
        else
            a.append(nested(b, dim + 1, offset));
    }
    return a;
}

QByteArray csv(const ComputeSnapshot &s, ExportView view, int layer, int head, int query)
{
    const QStringList qt = s.queryLabels, kt = s.keyLabels;
    QString out;
    const auto &seq = s.seq(layer);
    switch (view) {
    case ExportView::Weights:
    case ExportView::Lines: {
        const WeightMatrix<float> &w = s.weights(layer, head);
        out += QStringLiteral("query\\key");
        for (int j = 0; j < w.cols(); ++j)
            out += QLatin1Char(',') + quoteCsv(kt.value(j));
        out += QLatin1Char('\n');
        for (int i = 0; i < w.rows(); ++i) {
            out += quoteCsv(qt.value(i));
            for (int j = 0; j < w.cols(); ++j)
                out += QLatin1Char(',') + num(w(i, j));
            out += QLatin1Char('\n');
        }
        break;
    }
    case ExportView::Grid:
        out += QStringLiteral("head,query_index,query,key_index,key,weight\n");
        for (size_t h = 0; h < seq.weights.size(); ++h)
            for (int i = 0; i < s.tq(); ++i)
                for (int j = 0; j < s.tk(); ++j)
                    out += QStringLiteral("%1,%2,%3,%4,%5,%6\n")
                               .arg(h)
                               .arg(i)
                               .arg(quoteCsv(qt.value(i)))
                               .arg(j)
                               .arg(quoteCsv(kt.value(j)), num(seq.weights[h](i, j)));
        break;
    case ExportView::Row: {
        const WeightMatrix<float> &w = s.weights(layer, head);
        const int q = std::clamp(query, 0, int(w.rows()) - 1);
        out += QStringLiteral("key_index,key,weight\n");
        for (int j = 0; j < w.cols(); ++j)
            out += QStringLiteral("%1,%2,%3\n").arg(j).arg(quoteCsv(kt.value(j)), num(w(q, j)));
        break;
    }
    case ExportView::Embeddings: {
        const Mat<float> &x = s.queryInput(layer);
        const Mat<float> &y = seq.output;
        out += QStringLiteral("index,token,change_norm,cosine");
        for (int d = 0; d < x.cols(); ++d)
            out += QStringLiteral(",x_%1").arg(d);
        for (int d = 0; d < y.cols(); ++d)
            out += QStringLiteral(",y_%1").arg(d);
        out += QLatin1Char('\n');
        for (int i = 0; i < x.rows(); ++i) {
            double norm = std::nan(""), cosv = std::nan("");
            if (y.cols() == x.cols()) {
                const auto xi = x.row(i).cast<double>(), yi = y.row(i).cast<double>();
                norm = (yi - xi).norm();
                const double den = xi.norm() * yi.norm();
                cosv = den > 0 ? xi.dot(yi) / den : std::nan("");
            }
            out += QStringLiteral("%1,%2,%3,%4").arg(i).arg(quoteCsv(qt.value(i)), num(norm), num(cosv));
            for (int d = 0; d < x.cols(); ++d)
                out += QLatin1Char(',') + num(x(i, d));
            for (int d = 0; d < y.cols(); ++d)
                out += QLatin1Char(',') + num(y(i, d));
            out += QLatin1Char('\n');
        }
        break;
    }
    }
    return out.toUtf8();
}

QByteArray json(const ComputeSnapshot &s, ExportView view, int layer, int head, int query)
{
    const Block b = blockFor(s, view, layer, head, query);
    QJsonObject o;
    o.insert(QStringLiteral("view"), exportViewName(view));
    o.insert(QStringLiteral("title"), describeConfig(s, layer, head, view == ExportView::Grid ? HeadDisplay::All
                                                                : head < 0 ? HeadDisplay::Average
                                                                           : HeadDisplay::One));
    o.insert(QStringLiteral("sentence"), s.sentence);
    if (s.cross)
        o.insert(QStringLiteral("key_sentence"), s.keySentence);
    o.insert(QStringLiteral("query_tokens"), QJsonArray::fromStringList(s.queryLabels));
    o.insert(QStringLiteral("key_tokens"), QJsonArray::fromStringList(s.keyLabels));
    o.insert(QStringLiteral("num_heads"), s.attention(layer).numHeads);
    o.insert(QStringLiteral("d_model"), s.attention(layer).dModel);
    o.insert(QStringLiteral("d_head"), s.attention(layer).dHead);
    o.insert(QStringLiteral("scale"), s.attention(layer).scale);
    if (view == ExportView::Weights || view == ExportView::Row || view == ExportView::Lines)
        o.insert(QStringLiteral("head"), head < 0 ? QJsonValue(QStringLiteral("average")) : QJsonValue(head));
    if (view == ExportView::Row)
        o.insert(QStringLiteral("query"), query);
    if (view == ExportView::Embeddings)
        o.insert(QStringLiteral("layout"), b.shape.size() == 3 ? QStringLiteral("[input, output]")
                                                               : QStringLiteral("output"));
    QJsonArray fm;
    for (int r : s.seq(layer).fullyMaskedRows)
        fm.append(r);
    o.insert(QStringLiteral("fully_masked_rows"), fm);
    QJsonArray shape;
    for (int d : b.shape)
        shape.append(d);
    o.insert(QStringLiteral("shape"), shape);
    size_t offset = 0;
    o.insert(QStringLiteral("data"), nested(b, 0, offset));
    return QJsonDocument(o).toJson(QJsonDocument::Indented);
}

} // namespace

QJsonValue jsonNumber(double v)
{
    if (std::isfinite(v))
        return v;
    return num(v); // the case files' convention: "NaN", "Infinity", "-Infinity"
}

QString exportViewName(ExportView v)
{
    switch (v) {
    case ExportView::Weights: return QStringLiteral("weights");
    case ExportView::Grid: return QStringLiteral("grid");
    case ExportView::Embeddings: return QStringLiteral("embeddings");
    case ExportView::Row: return QStringLiteral("row");
    case ExportView::Lines: return QStringLiteral("lines");
    }
    return {};
}

bool parseExportView(const QString &name, ExportView &v)
{
    for (ExportView c : {ExportView::Weights, ExportView::Grid, ExportView::Embeddings, ExportView::Row, ExportView::Lines})
        if (name == exportViewName(c)) {
            v = c;
            return true;
        }
    return false;
}

bool isFigureSuffix(const QString &s)
{
    return s == QLatin1String("png") || s == QLatin1String("svg") || s == QLatin1String("pdf");
}

bool isMatrixSuffix(const QString &s)
{
    return s == QLatin1String("csv") || s == QLatin1String("npy") || s == QLatin1String("json");
}

QImage renderFigure(QCustomPlot *plot, const FigureOptions &opt, const QColor &background)
{
    const QRect oldViewport = plot->viewport();
    const double scale = opt.dpi / 96.0;
    const int lw = std::max(1, int(std::lround(opt.width / scale))), lh = std::max(1, int(std::lround(opt.height / scale)));
    FigureText text(plot, opt, lw, lh);
    layoutFor(plot, lw, lh);
    QImage img(std::max(1, opt.width), std::max(1, opt.height), QImage::Format_ARGB32_Premultiplied);
    img.fill(background);
    {
        QCPPainter p(&img);
        p.setRenderHint(QPainter::Antialiasing);
        if (scale != 1.0) {
            if (scale > 1.0)
                p.setMode(QCPPainter::pmNonCosmetic);
            p.scale(double(opt.width) / lw, double(opt.height) / lh);
        }
        plot->toPainter(&p, lw, lh);
    }
    // after painting: point-sized fonts follow the device's DPI, the scale above already did that
    const int dpm = int(std::lround(opt.dpi / 0.0254));
    img.setDotsPerMeterX(dpm);
    img.setDotsPerMeterY(dpm);
    text.restore();
    plot->setViewport(oldViewport);
    plot->replot(QCustomPlot::rpQueuedReplot);
    return img;
}

bool saveFigure(QCustomPlot *plot, const QString &path, const FigureOptions &opt, QString *error)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (!isFigureSuffix(suffix)) {
        if (error)
            *error = QStringLiteral("%1: unknown figure format (use .png, .svg or .pdf)").arg(path);
        return false;
    }
    if (opt.width < 16 || opt.height < 16 || opt.width > 20000 || opt.height > 20000 || opt.dpi < 10 || opt.dpi > 2400) {
        if (error)
            *error = QStringLiteral("figure size %1 x %2 at %3 dpi is out of range (16..20000 px, 10..2400 dpi)")
                         .arg(opt.width)
                         .arg(opt.height)
                         .arg(opt.dpi);
        return false;
    }
    if (suffix == QLatin1String("png")) {
        const QImage img = renderFigure(plot, opt);
        OutputFile file(path);
        if (!openSave(file, path, error))
            return false;
        if (!img.save(file.device(), "PNG")) {
            file.cancel();
            if (error)
                *error = QStringLiteral("cannot encode PNG %1").arg(path);
            return false;
        }
        return commit(file, path, error);
    }
    OutputFile file(path);
    if (!openSave(file, path, error))
        return false;
    const QRect oldViewport = plot->viewport();
    FigureText text(plot, opt, opt.width, opt.height);
    if (suffix == QLatin1String("svg")) {
        layoutFor(plot, opt.width, opt.height);
        QSvgGenerator gen;
        gen.setOutputDevice(file.device());
        gen.setSize(QSize(opt.width, opt.height));
        gen.setViewBox(QRect(0, 0, opt.width, opt.height));
        gen.setResolution(96);
        gen.setTitle(QStringLiteral("attnviz"));
        QCPPainter p;
        p.begin(&gen);
        p.setMode(QCPPainter::pmVectorized);
        plot->toPainter(&p, opt.width, opt.height);
        p.end();
    } else {
        layoutFor(plot, opt.width, opt.height);
        QPdfWriter writer(file.device());
        writer.setCreator(QStringLiteral("attnviz"));
        // 96 dpi, as the PNG and the SVG: a point-sized font takes the same share of the figure in
        // all three (at 72 the PDF's text was 3/4 of the PNG's); the window below maps
        // the layout's width × height onto the width × height points of the page
        writer.setResolution(96);
        writer.setPageLayout(QPageLayout(QPageSize(QSizeF(opt.width, opt.height), QPageSize::Point,
                                                   QString(), QPageSize::ExactMatch),
                                         QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
        QCPPainter p;
        if (!p.begin(&writer)) {
            file.cancel();
            if (error)
                *error = QStringLiteral("cannot start a PDF in %1").arg(path);
            return false;
        }
        p.setMode(QCPPainter::pmVectorized);
        p.setMode(QCPPainter::pmNoCaching);
        p.setWindow(0, 0, opt.width, opt.height);
        plot->toPainter(&p, opt.width, opt.height);
        p.end();
    }
    text.restore();
    plot->setViewport(oldViewport);
    plot->replot(QCustomPlot::rpQueuedReplot);
    return commit(file, path, error);
}

bool saveMatrices(const ComputeSnapshot &s, ExportView view, int layer, int head, int query, const QString &path, QString *error)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (!isMatrixSuffix(suffix)) {
        if (error)
            *error = QStringLiteral("%1: unknown matrix format (use .csv, .npy or .json)").arg(path);
        return false;
    }
    if (!s.hasResult()) {
        if (error)
            *error = QStringLiteral("nothing to export: %1").arg(s.message);
        return false;
    }
    if (s.longText) { // its weights are computed where a view looks, never kept whole
        if (error)
            *error = QStringLiteral("a long text's weights are not kept whole (%L1 tokens): not yet written as a matrix; "
                                    "export the current view as a figure").arg(s.tq());
        return false;
    }
    QByteArray bytes;
    if (suffix == QLatin1String("csv"))
        bytes = csv(s, view, layer, head, query);
    else if (suffix == QLatin1String("npy"))
        bytes = npy(blockFor(s, view, layer, head, query));
    else
        bytes = json(s, view, layer, head, query);
    return writeBytes(path, bytes, error);
}

bool saveAllLayers(const ComputeSnapshot &s, const QString &path, QString *error)
{
    auto failWith = [&](const QString &why) {
        if (error)
            *error = why;
        return false;
    };
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (!isMatrixSuffix(suffix))
        return failWith(QStringLiteral("%1: --all-layers writes .npy, .csv or .json").arg(path));
    if (!s.hasResult())
        return failWith(QStringLiteral("nothing to export: %1").arg(s.message));
    if (s.longText)
        return failWith(QStringLiteral("a long text's weights are not kept whole (%L1 tokens): not yet written for every layer")
                            .arg(s.tq()));
    const int layers = s.numLayers(), tq = s.tq(), tk = s.tk();
    const int heads = layers > 0 ? int(s.seq(0).weights.size()) : 0;
    for (int l = 0; l < layers; ++l)
        if (int(s.seq(l).weights.size()) != heads)
            return failWith(QStringLiteral("layer %1 has %2 heads, layer 0 %3: not one array").arg(l).arg(s.seq(l).weights.size()).arg(heads));
    const qint64 cells = qint64(layers) * heads * tq * tk;
    if (suffix != QLatin1String("npy") && cells > kMaxTextCells)
        return failWith(QStringLiteral("%1 x %2 x %3 x %4 = %5 weights: too many for %6 text (at most %7); write .npy")
                            .arg(layers).arg(heads).arg(tq).arg(tk).arg(cells).arg(suffix.toUpper()).arg(kMaxTextCells));
    OutputFile file(path);
    if (!openSave(file, path, error))
        return false;
    QIODevice *dev = file.device();
    bool ok = true;
    auto put = [&](const QByteArray &bytes) { ok = ok && dev->write(bytes) == bytes.size(); };
    std::vector<float> row(size_t(std::max(tk, 0)));
    auto rowOf = [&](const WeightMatrix<float> &w, int i) {
        std::fill(row.begin(), row.end(), 0.0f); // the cells a triangle does not store: 0
        const auto stored = w.storedRow(i);
        std::copy(stored.data(), stored.data() + std::min<qsizetype>(stored.size(), tk), row.begin());
    };
    if (suffix == QLatin1String("npy")) {
        Block header;
        header.shape = {layers, heads, tq, tk};
        put(npy(header)); // the header alone: the values follow, row by row
        for (int l = 0; l < layers && ok; ++l)
            for (int h = 0; h < heads && ok; ++h)
                for (int i = 0; i < tq && ok; ++i) {
                    rowOf(s.seq(l).weights[size_t(h)], i);
                    put(QByteArray::fromRawData(reinterpret_cast<const char *>(row.data()), qsizetype(row.size() * sizeof(float))));
                }
    } else if (suffix == QLatin1String("csv")) {
        put("layer,head,query_index,query,key_index,key,weight\n");
        for (int l = 0; l < layers && ok; ++l)
            for (int h = 0; h < heads && ok; ++h)
                for (int i = 0; i < tq && ok; ++i) {
                    rowOf(s.seq(l).weights[size_t(h)], i);
                    QString out;
                    const QString lead = QStringLiteral("%1,%2,%3,%4,").arg(l).arg(h).arg(i).arg(quoteCsv(s.queryLabels.value(i)));
                    for (int j = 0; j < tk; ++j)
                        out += lead + QStringLiteral("%1,%2,%3\n").arg(j).arg(quoteCsv(s.keyLabels.value(j)), num(row[size_t(j)]));
                    put(out.toUtf8());
                }
    } else {
        QJsonArray all;
        for (int l = 0; l < layers; ++l) {
            QJsonArray perHead;
            for (int h = 0; h < heads; ++h) {
                QJsonArray rows;
                for (int i = 0; i < tq; ++i) {
                    rowOf(s.seq(l).weights[size_t(h)], i);
                    QJsonArray r;
                    for (float v : row)
                        r.append(jsonNumber(double(v)));
                    rows.append(r);
                }
                perHead.append(rows);
            }
            all.append(perHead);
        }
        QJsonArray qpos, kpos;
        for (int i = 0; i < tq; ++i)
            qpos.append(i);
        for (int j = 0; j < tk; ++j)
            kpos.append(j);
        QJsonObject o{{QStringLiteral("view"), QStringLiteral("all-layers")},
                      {QStringLiteral("sentence"), s.sentence},
                      {QStringLiteral("query_tokens"), QJsonArray::fromStringList(s.queryLabels.mid(0, tq))},
                      {QStringLiteral("query_positions"), qpos},
                      {QStringLiteral("key_tokens"), QJsonArray::fromStringList(s.keyLabels.mid(0, tk))},
                      {QStringLiteral("key_positions"), kpos},
                      {QStringLiteral("layers"), layers},
                      {QStringLiteral("heads"), heads},
                      {QStringLiteral("shape"), QJsonArray{layers, heads, tq, tk}},
                      {QStringLiteral("axes"), QJsonArray{QStringLiteral("layer"), QStringLiteral("head"), QStringLiteral("query"),
                                                          QStringLiteral("key")}},
                      {QStringLiteral("weights"), all}};
        if (s.cross)
            o.insert(QStringLiteral("key_sentence"), s.keySentence);
        put(QJsonDocument(o).toJson(QJsonDocument::Compact));
    }
    if (!ok) {
        const QString why = dev->errorString();
        file.cancel();
        return failWith(QStringLiteral("cannot write %1: %2").arg(path, why));
    }
    return commit(file, path, error);
}

bool saveLabelledMatrix(const LabelledMatrix &m, const QString &path, QString *error)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (!isMatrixSuffix(suffix)) {
        if (error)
            *error = QStringLiteral("%1: unknown matrix format (use .csv, .npy or .json)").arg(path);
        return false;
    }
    Block b;
    b.shape = {int(m.values.rows()), int(m.values.cols())};
    for (Eigen::Index i = 0; i < m.values.rows(); ++i)
        for (Eigen::Index j = 0; j < m.values.cols(); ++j)
            b.values.push_back(float(m.values(i, j)));
    QByteArray bytes;
    if (suffix == QLatin1String("npy")) {
        bytes = npy(b);
    } else if (suffix == QLatin1String("csv")) {
        QString out = quoteCsv(m.corner);
        for (const QString &c : m.columns)
            out += QLatin1Char(',') + quoteCsv(c);
        out += QLatin1Char('\n');
        for (Eigen::Index i = 0; i < m.values.rows(); ++i) {
            out += quoteCsv(m.rows.value(int(i)));
            for (Eigen::Index j = 0; j < m.values.cols(); ++j)
                out += QLatin1Char(',') + num(m.values(i, j));
            out += QLatin1Char('\n');
        }
        bytes = out.toUtf8();
    } else {
        QJsonObject o{{QStringLiteral("view"), m.view},
                      {QStringLiteral("title"), m.title},
                      {QStringLiteral("rows"), QJsonArray::fromStringList(m.rows)},
                      {QStringLiteral("columns"), QJsonArray::fromStringList(m.columns)},
                      {QStringLiteral("shape"), QJsonArray{b.shape[0], b.shape[1]}}};
        QJsonArray data;
        for (Eigen::Index i = 0; i < m.values.rows(); ++i) {
            QJsonArray row;
            for (Eigen::Index j = 0; j < m.values.cols(); ++j)
                row.append(jsonNumber(m.values(i, j)));
            data.append(row);
        }
        o.insert(QStringLiteral("data"), data);
        if (!m.extra.isEmpty())
            o.insert(QStringLiteral("extra"), m.extra);
        bytes = QJsonDocument(o).toJson(QJsonDocument::Indented);
    }
    return writeBytes(path, bytes, error);
}

} // namespace attnviz::ui
