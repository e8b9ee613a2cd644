// SPDX-License-Identifier: GPL-3.0-or-later
// A QPaintEngine that draws nothing and keeps the strings: QPainter hands every text item to
// drawTextItem with the painter's transform set through updateState.
#include "drawntext.h"

#include <qcustomplot.h>

#include <QAbstractTextDocumentLayout>
#include <QFontMetricsF>
#include <QPaintDevice>
#include <QPaintEngine>
#include <QRegularExpression>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextEdit>
#include <QWidget>

#include <cmath>

namespace attnviz::test {

namespace {

class RecordingEngine : public QPaintEngine {
public:
    RecordingEngine() : QPaintEngine(QPaintEngine::AllFeatures) {}
    QVector<DrawnText> texts;

    bool begin(QPaintDevice *) override { return true; }
    bool end() override { return true; }
    void updateState(const QPaintEngineState &s) override
    {
        if (s.state() & QPaintEngine::DirtyTransform)
            m_transform = s.transform();
        if (s.state() & QPaintEngine::DirtyPen)
            m_pen = s.pen().color();
    }
    void drawPixmap(const QRectF &, const QPixmap &, const QRectF &) override {}
    void drawTextItem(const QPointF &p, const QTextItem &ti) override
    {
        const QFontMetricsF fm(ti.font());
        const QRectF glyphs(p.x(), p.y() - fm.ascent(), fm.horizontalAdvance(ti.text()), fm.ascent() + fm.descent());
        texts.push_back({ti.text(), m_transform.map(p), m_pen, QFontInfo(ti.font()).pixelSize(),
                         m_transform.map(glyphs).boundingRect()});
    }
    void drawPolygon(const QPointF *, int, PolygonDrawMode) override {}
    void drawPath(const QPainterPath &) override {}
    Type type() const override { return QPaintEngine::User; }

private:
    QTransform m_transform;
    QColor m_pen;
};

class RecordingDevice : public QPaintDevice {
public:
    explicit RecordingDevice(QSize size) : m_size(size) {}
    RecordingEngine engine;
    QPaintEngine *paintEngine() const override { return const_cast<RecordingEngine *>(&engine); }

protected:
    int metric(PaintDeviceMetric m) const override
    {
        switch (m) {
        case PdmWidth:
            return m_size.width();
        case PdmHeight:
            return m_size.height();
        case PdmWidthMM:
            return m_size.width() * 254 / 960;
        case PdmHeightMM:
            return m_size.height() * 254 / 960;
        case PdmNumColors:
            return INT_MAX;
        case PdmDepth:
            return 32;
        case PdmDpiX:
        case PdmDpiY:
        case PdmPhysicalDpiX:
        case PdmPhysicalDpiY:
            return 96;
        case PdmDevicePixelRatio:
            return 1;
        case PdmDevicePixelRatioScaled:
            return int(QPaintDevice::devicePixelRatioFScale());
        }
        return 0;
    }

private:
    QSize m_size;
};

int decimals(const QString &n)
{
    const int dot = int(n.indexOf(QLatin1Char('.')));
    return dot < 0 ? 0 : int(n.size()) - dot - 1;
}

} // namespace

QVector<DrawnText> drawnTexts(QCustomPlot *plot)
{
    RecordingDevice device(plot->size());
    {
        QCPPainter painter(&device);
        plot->toPainter(&painter, plot->width(), plot->height());
    }
    return device.engine.texts;
}

QVector<DrawnText> widgetDrawnTexts(QWidget *widget)
{
    RecordingDevice device(widget->size());
    widget->render(&device);
    return device.engine.texts;
}

QStringList widgetTexts(QWidget *widget)
{
    RecordingDevice device(widget->size());
    widget->render(&device);
    QStringList out;
    for (const DrawnText &t : device.engine.texts)
        out << t.text;
    return out;
}

QStringList textsInView(QCustomPlot *plot)
{
    const QRegion visible = plot->visibleRegion();
    QStringList out;
    for (const DrawnText &t : drawnTexts(plot))
        if (visible.contains(t.at.toPoint() - QPoint(0, 2))) // the baseline, a little inside the glyphs
            out << t.text;
    return out;
}

QStringList wordsInView(QTextEdit *edit)
{
    QStringList out;
    const QRect view = edit->viewport()->rect();
    const int dy = edit->verticalScrollBar()->value(), dx = edit->horizontalScrollBar()->value();
    QTextDocument *doc = edit->document();
    static const QRegularExpression word(QStringLiteral("[^\\s,;:\\[\\]()=×+/]+"));
    for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
        const QTextLayout *layout = b.layout();
        const QPointF origin = doc->documentLayout()->blockBoundingRect(b).topLeft();
        for (auto it = word.globalMatch(b.text()); it.hasNext();) {
            const auto m = it.next();
            const QTextLine line = layout->lineForTextPosition(int(m.capturedStart()));
            if (!line.isValid())
                continue;
            const QRectF r(origin.x() + line.cursorToX(int(m.capturedStart())) - dx, origin.y() + line.y() - dy,
                           line.cursorToX(int(m.capturedEnd())) - line.cursorToX(int(m.capturedStart())),
                           line.height());
            if (view.contains(r.toAlignedRect()))
                out << m.captured();
        }
    }
    return out;
}

bool sameNumber(const QString &quoted, const QString &drawn)
{
    auto value = [](QString s, bool *ok) {
        s.replace(QChar(0x2212), QLatin1Char('-'));
        return s.toDouble(ok);
    };
    bool a = false, b = false;
    const double q = value(quoted, &a), d = value(drawn.trimmed(), &b);
    if (!a || !b)
        return false;
    const int k = std::min(decimals(quoted), decimals(drawn.trimmed()));
    return std::abs(q - d) < 0.5 * std::pow(10.0, -k) - 1e-12;
}

} // namespace attnviz::test
