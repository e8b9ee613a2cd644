// SPDX-License-Identifier: GPL-3.0-or-later
// A view that does not rebuild its plots while the window shows another tab: a snapshot that
// arrives then only marks it dirty, and it rebuilds once when shown.
#pragma once

#include "views/view.h"

namespace attnviz::ui {

class DeferredView : public View {
public:
    using View::View;

protected:
    // Builds the plots from the current snapshot (each view's own work).
    virtual void rebuild() = 0;

    // True (and the rebuild postponed to showEvent) while the window shows another tab.
    bool deferred()
    {
        if (!isVisible() && window() != this && window()->isVisible()) {
            m_dirty = true;
            return true;
        }
        m_dirty = false;
        return false;
    }

    void showEvent(QShowEvent *e) override
    {
        View::showEvent(e);
        if (m_dirty)
            rebuild();
    }

private:
    bool m_dirty = false;
};

} // namespace attnviz::ui
