// SPDX-License-Identifier: GPL-3.0-or-later
#include "style/appearance.h"

#include "style/contraststyle.h"
#include "style/plotstyle.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QEvent>
#include <QSettings>

namespace attnviz::ui {

namespace {

struct NamedId {
    int value;
    const char *id;
};
const NamedId kThemes[] = {{int(Theme::System), "system"}, {int(Theme::Light), "light"}, {int(Theme::Dark), "dark"},
                         {int(Theme::HighContrast), "high-contrast"}};
const NamedId kSequential[] = {{int(SequentialMap::Viridis), "viridis"}, {int(SequentialMap::Cividis), "cividis"},
                             {int(SequentialMap::Magma), "magma"}, {int(SequentialMap::Greys), "greys"}};
const NamedId kDiverging[] = {{int(DivergingMap::RedBlue), "blue-red"}, {int(DivergingMap::PurpleOrange), "purple-orange"}};

template <size_t N>
QString idOf(const NamedId (&table)[N], int v)
{
    for (const NamedId &n : table)
        if (n.value == v)
            return QString::fromLatin1(n.id);
    return {};
}

template <size_t N, typename E>
bool parse(const NamedId (&table)[N], const QString &id, E &out)
{
    for (const NamedId &n : table)
        if (id == QLatin1String(n.id)) {
            out = E(n.value);
            return true;
        }
    return false;
}

QPalette darkPalette()
{
    QPalette p;
    const QColor window(45, 45, 48), base(30, 30, 32), text(232, 232, 232), disabled(130, 130, 130);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, QColor(60, 60, 64));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, disabled);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(58, 58, 62));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(255, 90, 90));
    p.setColor(QPalette::Light, QColor(80, 80, 84));
    p.setColor(QPalette::Midlight, QColor(66, 66, 70));
    p.setColor(QPalette::Mid, QColor(110, 110, 115));
    p.setColor(QPalette::Dark, QColor(25, 25, 27));
    p.setColor(QPalette::Shadow, Qt::black);
    p.setColor(QPalette::Highlight, QColor(64, 140, 220));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(110, 170, 255));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabled);
    return p;
}

QPalette highContrastPalette()
{
    QPalette p;
    const QColor black(0, 0, 0), white(255, 255, 255), yellow(255, 230, 0);
    for (auto role : {QPalette::Window, QPalette::Base, QPalette::AlternateBase, QPalette::Button, QPalette::ToolTipBase,
                      QPalette::Dark, QPalette::Shadow})
        p.setColor(role, black);
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText, QPalette::ToolTipText,
                      QPalette::BrightText, QPalette::Light, QPalette::Midlight})
        p.setColor(role, white);
    p.setColor(QPalette::Mid, QColor(160, 160, 160));
    p.setColor(QPalette::PlaceholderText, QColor(200, 200, 200));
    p.setColor(QPalette::Highlight, yellow);
    p.setColor(QPalette::HighlightedText, black);
    p.setColor(QPalette::Link, QColor(0, 255, 255));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, QColor(170, 170, 170));
    return p;
}

bool isLightColour(const QColor &c) { return c.lightness() >= 128; }

template <typename Setter, typename Getter, typename V>
void setIfDifferent(Getter get, Setter set, const V &v)
{
    if (!(get() == v))
        set(v);
}

void styleAxis(QCPAxis *a, const QColor &text, const QColor &grid, const QFont &font, bool strong)
{
    // an axis in its curve's colour (colourAxis) keeps it, only its width follows the theme
    const bool own = a->property("attnviz.ownColour").toBool();
    const QColor ink = own ? a->labelColor() : text;
    QPen pen(ink, strong ? 1.6 : 1.0);
    setIfDifferent([a] { return a->basePen(); }, [a](const QPen &p) { a->setBasePen(p); }, pen);
    setIfDifferent([a] { return a->tickPen(); }, [a](const QPen &p) { a->setTickPen(p); }, pen);
    setIfDifferent([a] { return a->subTickPen(); }, [a](const QPen &p) { a->setSubTickPen(p); }, pen);
    setIfDifferent([a] { return a->tickLabelColor(); }, [a](const QColor &c) { a->setTickLabelColor(c); }, ink);
    setIfDifferent([a] { return a->labelColor(); }, [a](const QColor &c) { a->setLabelColor(c); }, ink);
    QFont tickFont = font;
    if (a->property("attnvizLabelPx").isValid()) { // a token axis sizes its labels from this font (labelTokenAxis)
        a->setProperty("attnvizBaseFont", font);
        tickFont.setPixelSize(a->property("attnvizLabelPx").toInt());
    }
    setIfDifferent([a] { return a->tickLabelFont(); }, [a](const QFont &f) { a->setTickLabelFont(f); }, tickFont);
    setIfDifferent([a] { return a->labelFont(); }, [a](const QFont &f) { a->setLabelFont(f); }, font);
    if (a->grid()) {
        QPen gp = a->grid()->pen();
        gp.setColor(grid);
        setIfDifferent([a] { return a->grid()->pen(); }, [a](const QPen &p) { a->grid()->setPen(p); }, gp);
        QPen zp = a->grid()->zeroLinePen();
        if (zp.style() != Qt::NoPen) {
            zp.setColor(grid);
            a->grid()->setZeroLinePen(zp);
        }
    }
}

// A diverging map is white in the middle; no sequential map is.
bool looksDiverging(QCPColorGradient g)
{
    const QColor mid = QColor::fromRgb(g.color(0.5, QCPRange(0, 1)));
    return mid.lightness() > 235;
}

} // namespace

QString themeId(Theme t) { return idOf(kThemes, int(t)); }
QString sequentialId(SequentialMap m) { return idOf(kSequential, int(m)); }
QString divergingId(DivergingMap m) { return idOf(kDiverging, int(m)); }
bool parseTheme(const QString &id, Theme &t) { return parse(kThemes, id, t); }
bool parseSequential(const QString &id, SequentialMap &m) { return parse(kSequential, id, m); }
bool parseDiverging(const QString &id, DivergingMap &m) { return parse(kDiverging, id, m); }

AppearanceManager *AppearanceManager::instance()
{
    static AppearanceManager *m = new AppearanceManager; // lives as long as the application
    return m;
}

AppearanceManager::AppearanceManager()
{
    if (qApp) {
        ContrastStyle::install(); // before the palette is read: a new style may bring its own
        m_systemPalette = QGuiApplication::palette();
        m_systemFont = QGuiApplication::font();
        qApp->installEventFilter(this);
    }
}

bool AppearanceManager::eventFilter(QObject *o, QEvent *e)
{
    // the desktop switched between light and dark: follow it when the theme is "system"
    if (o == qApp && e->type() == QEvent::ApplicationPaletteChange && !m_applying) {
        m_systemPalette = QGuiApplication::palette();
        if (m_current.theme == Theme::System)
            emit changed(m_current);
    }
    return QObject::eventFilter(o, e);
}

void AppearanceManager::setAppearance(const Appearance &a)
{
    Appearance v = a;
    v.fontScale = std::clamp(v.fontScale, 0.6, 3.0);
    if (v == m_current)
        return;
    m_current = v;
    apply();
    emit changed(m_current);
}

void AppearanceManager::apply()
{
    if (!qApp)
        return;
    m_applying = true;
    ContrastStyle::install();
    switch (m_current.theme) {
    case Theme::System: QApplication::setPalette(m_systemPalette); break;
    case Theme::Light: QApplication::setPalette(QPalette(QColor(239, 239, 239))); break;
    case Theme::Dark: QApplication::setPalette(darkPalette()); break;
    case Theme::HighContrast: QApplication::setPalette(highContrastPalette()); break;
    }
    QFont f = m_systemFont;
    if (f.pointSizeF() > 0)
        f.setPointSizeF(m_systemFont.pointSizeF() * m_current.fontScale);
    else
        f.setPixelSize(std::max(6, int(std::lround(m_systemFont.pixelSize() * m_current.fontScale))));
    QApplication::setFont(f);
    m_applying = false;
}

bool AppearanceManager::isDark() const { return !isLightColour(QGuiApplication::palette().color(QPalette::Base)); }

void AppearanceManager::save() const
{
    QSettings s;
    s.setValue(QStringLiteral("appearance/theme"), themeId(m_current.theme));
    s.setValue(QStringLiteral("appearance/sequential"), sequentialId(m_current.sequential));
    s.setValue(QStringLiteral("appearance/diverging"), divergingId(m_current.diverging));
    s.setValue(QStringLiteral("appearance/fontScale"), m_current.fontScale);
    s.setValue(QStringLiteral("appearance/fixedWeights"), m_current.fixedWeights);
}

void AppearanceManager::restore()
{
    QSettings s;
    Appearance a = m_current;
    parseTheme(s.value(QStringLiteral("appearance/theme")).toString(), a.theme);
    parseSequential(s.value(QStringLiteral("appearance/sequential")).toString(), a.sequential);
    parseDiverging(s.value(QStringLiteral("appearance/diverging")).toString(), a.diverging);
    bool ok = false;
    const double scale = s.value(QStringLiteral("appearance/fontScale")).toDouble(&ok);
    if (ok && scale > 0)
        a.fontScale = scale;
    a.fixedWeights = s.value(QStringLiteral("appearance/fixedWeights"), a.fixedWeights).toBool();
    setAppearance(a);
}

void AppearanceManager::stylePlot(QCustomPlot *plot)
{
    const Appearance &a = instance()->appearance();
    const QPalette pal = QGuiApplication::palette();
    const bool hc = a.theme == Theme::HighContrast;
    const QColor bg = pal.color(QPalette::Base);
    const QColor text = pal.color(QPalette::Text);
    QColor grid = text;
    grid.setAlpha(hc ? 110 : 45);
    const QFont base = QGuiApplication::font();
    QFont title = base;
    title.setBold(true);
    title.setPointSizeF(base.pointSizeF() > 0 ? base.pointSizeF() * 1.15 : 11);

    if (plot->property("attnviz.background").value<QColor>() != bg) {
        plot->setBackground(QBrush(bg));
        // QCustomPlot::paintEvent fills its whole rect with this brush before the layers: with an
        // opaque colour Qt need not paint the widgets under a plot (the tab page, the tab frame) each
        // time the plot repaints
        plot->setAttribute(Qt::WA_OpaquePaintEvent, bg.alpha() == 255);
        plot->setProperty("attnviz.background", bg);
    }
    for (QCPAxisRect *r : plot->axisRects()) {
        for (QCPAxis *ax : r->axes())
            styleAxis(ax, text, grid, base, hc);
    }
    // free-standing labels (values over bars, messages) take the text colour unless they sit on
    // their own background or asked to keep theirs
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto *t = qobject_cast<QCPItemText *>(plot->item(i)))
            if (t->brush().style() == Qt::NoBrush && !t->property("attnviz.ownColour").toBool())
                setIfDifferent([t] { return t->color(); }, [t](const QColor &c) { t->setColor(c); }, text);
    for (QCPLayoutElement *el : plot->plotLayout()->elements(true)) {
        if (auto *t = qobject_cast<QCPTextElement *>(el)) {
            setIfDifferent([t] { return t->textColor(); }, [t](const QColor &c) { t->setTextColor(c); }, text);
            if (plot->property("attnviz.ownTitles").toBool()) // the view sizes and wraps its titles itself
                continue;
            QFont f = title;
            f.setBold(t->font().bold());
            if (!t->font().bold())
                f.setPointSizeF(base.pointSizeF() > 0 ? base.pointSizeF() : 10);
            setIfDifferent([t] { return t->font(); }, [t](const QFont &v) { t->setFont(v); }, f);
            // a long title breaks at its " · " separators to fit the plot, and never widens the
            // plot (or the window) beyond it. Measured again only when the title, its font or the
            // room changed (this runs before every replot: a keystroke's replot kept re-measuring it)
            const int avail = plot->width() - 16;
            // from the view's own text: the breaks added here are undone when the room grows again
            // (a title broken while its plot was narrow, presenting or half laid out, would keep its
            // extra lines, and its dock their height, for good)
            QString full = t->text();
            if (t->property("attnviz.fittedText").toString() == full)
                full = t->property("attnviz.fullText").toString();
            const auto fitKey = [&] { return QStringLiteral("%1|%2|%3").arg(avail).arg(f.toString(), full); };
            // (and only while the title still shows that fit: a view that sets its full title again
            // gets it fitted again)
            if (t->property("attnviz.fitted").toString() == fitKey()
                && t->text() == t->property("attnviz.fittedText").toString())
                continue;
            const QFontMetrics fm(f);
            QString fitted = full;
            if (avail > 100) {
                bool tooWide = false;
                for (const QString &line : full.split(QLatin1Char('\n')))
                    tooWide = tooWide || fm.horizontalAdvance(line) > avail;
                if (tooWide) {
                    QStringList out;
                    for (const QString &line : full.split(QLatin1Char('\n'))) {
                        QString cur;
                        for (const QString &part : line.split(QStringLiteral(" \u00b7 "))) {
                            const QString joined = cur.isEmpty() ? part : cur + QStringLiteral(" \u00b7 ") + part;
                            if (!cur.isEmpty() && fm.horizontalAdvance(joined) > avail) {
                                out << cur;
                                cur = part;
                            } else {
                                cur = joined;
                            }
                        }
                        out << cur;
                    }
                    fitted = out.join(QLatin1Char('\n'));
                }
            }
            if (t->text() != fitted)
                t->setText(fitted);
            t->setProperty("attnviz.fullText", full);
            t->setProperty("attnviz.fittedText", fitted);
            const QSize min(80, fm.height() * (int(t->text().count(QLatin1Char('\n'))) + 1) + 6);
            if (t->minimumSize() != min)
                t->setMinimumSize(min);
            t->setProperty("attnviz.fitted", fitKey());
        } else if (auto *s = qobject_cast<QCPColorScale *>(el)) {
            styleAxis(s->axis(), text, grid, base, hc);
            // the kind the view chose last (views switch a scale between the kinds, e.g. for cosine
            // weights), in the map chosen now
            const QCPColorGradient g = looksDiverging(s->gradient()) ? divergingGradient() : weightsGradient();
            if (!(s->gradient() == g))
                s->setGradient(g);
        } else if (auto *l = qobject_cast<QCPLegend *>(el)) {
            l->setTextColor(text);
            l->setBrush(QBrush(bg));
            l->setBorderPen(QPen(grid));
            l->setFont(base);
        }
    }
}

void AppearanceManager::track(QCustomPlot *plot)
{
    if (!plot || plot->property("attnviz.styled").toBool())
        return;
    plot->setProperty("attnviz.styled", true);
    replotOnlyWhenShown(plot); // a hidden tab's or dock's plot does not replot on every resize
    QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] {
        stylePlot(plot);
        resetGroupedMargins(plot); // a margin group takes what its axes need now, also less than before
    });
    stylePlot(plot);
}

} // namespace attnviz::ui
