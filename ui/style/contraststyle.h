// SPDX-License-Identifier: GPL-3.0-or-later
// The application's style with two things every theme needs visible: a check box's or radio
// button's frame where the base style draws it in the window's own colour (Fusion darkens the window
// colour for it: black on black in high contrast), and a disabled slider that looks disabled (the
// base style fills its groove with the palette's highlight whatever the state).
#pragma once

#include <QProxyStyle>

namespace attnviz::ui {

class ContrastStyle : public QProxyStyle {
    Q_OBJECT
public:
    using QProxyStyle::QProxyStyle;

    void drawPrimitive(PrimitiveElement pe, const QStyleOption *opt, QPainter *p, const QWidget *w = nullptr) const override;
    void drawComplexControl(ComplexControl cc, const QStyleOptionComplex *opt, QPainter *p,
                            const QWidget *w = nullptr) const override;

    // Makes the application's style a ContrastStyle over the style in use (once; idempotent).
    static void install();
};

} // namespace attnviz::ui
