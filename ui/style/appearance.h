// SPDX-License-Identifier: GPL-3.0-or-later
// How the window looks: the theme (follow the system, light, dark, high contrast), the colour maps
// of the views (sequential for weights, diverging for signed values; colour-blind-safe choices) and
// the font scale (presentation mode enlarges everything). One application-wide value, stored in
// QSettings; every plot is restyled from it before it draws (stylePlot).
#pragma once

#include <QFont>
#include <QObject>
#include <QPalette>
#include <QString>

class QCustomPlot;

namespace attnviz::ui {

enum class Theme { System, Light, Dark, HighContrast };
enum class SequentialMap { Viridis, Cividis, Magma, Greys };
enum class DivergingMap { RedBlue, PurpleOrange };

struct Appearance {
    Theme theme = Theme::System;
    SequentialMap sequential = SequentialMap::Viridis;
    DivergingMap diverging = DivergingMap::RedBlue;
    double fontScale = 1.0; // 1 = the system font size
    // Weights coloured on a fixed 0–1 scale (lessons' default: near-uniform weights look uniform)
    // instead of 0 to their maximum.
    bool fixedWeights = false;

    bool operator==(const Appearance &o) const
    {
        return theme == o.theme && sequential == o.sequential && diverging == o.diverging && fontScale == o.fontScale
            && fixedWeights == o.fixedWeights;
    }
    bool operator!=(const Appearance &o) const { return !(*this == o); }
};

// Names used in menus' data, QSettings and session files ("viridis", "dark" …).
QString themeId(Theme t);
QString sequentialId(SequentialMap m);
QString divergingId(DivergingMap m);
bool parseTheme(const QString &id, Theme &t);
bool parseSequential(const QString &id, SequentialMap &m);
bool parseDiverging(const QString &id, DivergingMap &m);

// The application's appearance. Changing it sets the palette and font of the application (the
// system's own palette for Theme::System) and emits changed(); views then redraw.
class AppearanceManager : public QObject {
    Q_OBJECT
public:
    static AppearanceManager *instance();

    const Appearance &appearance() const { return m_current; }
    void setAppearance(const Appearance &a);
    // Whether the palette in use is dark (a dark theme, or a dark system palette).
    bool isDark() const;
    // QSettings "appearance/*"; restore() applies what was saved.
    void save() const;
    void restore();

    // Restyles one plot: background, axes, grid, text and fonts from the palette and font scale;
    // colour scales get the current sequential or diverging map. Called before every replot of a
    // plot passed to track().
    static void stylePlot(QCustomPlot *plot);
    // stylePlot before each replot of `plot`, for as long as it lives; a plot whose view styles it
    // itself sets the property "attnviz.styled" to true first and is left alone; one that wraps
    // its own titles sets "attnviz.ownTitles" (their colour still follows the theme).
    static void track(QCustomPlot *plot);

signals:
    void changed(const attnviz::ui::Appearance &a);

protected:
    bool eventFilter(QObject *o, QEvent *e) override;

private:
    AppearanceManager();
    void apply();
    Appearance m_current;
    QPalette m_systemPalette;
    QFont m_systemFont;
    bool m_applying = false;
};

} // namespace attnviz::ui
