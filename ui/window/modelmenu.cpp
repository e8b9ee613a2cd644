// SPDX-License-Identifier: GPL-3.0-or-later
#include "window/modelmenu.h"

#include "mainwindow.h"
#include "window/localmodelsdialog.h"
#include "window/modelloader.h"

#include "bundledmodel.h"

#include <QAction>
#include <QActionGroup>
#include <QDir>
#include <QMenu>

namespace attnviz::ui {

ModelMenu::ModelMenu(MainWindow *window, ModelLoader *loader, QMenu *modelMenu, QMenu *fileMenu)
    : QObject(window)
    , m_window(window)
    , m_loader(loader)
    , m_menu(modelMenu)
{
    m_menu->setObjectName(QStringLiteral("modelMenu"));
    QAction *open = fileMenu->addAction(tr("Open &model…"), QKeySequence(tr("Ctrl+Shift+O")), m_window,
                                        &MainWindow::askModelFolder);
    open->setObjectName(QStringLiteral("openModelAction"));
    m_recentFile = fileMenu->addMenu(tr("Recent m&odels"));
    m_recentFile->setObjectName(QStringLiteral("recentModelsMenu"));
    connect(m_loader, &ModelLoader::recentChanged, this, &ModelMenu::rebuild);
    rebuild();
}

void ModelMenu::showLocalModels()
{
    if (!m_local) {
        m_local = new LocalModelsDialog(m_window);
        connect(m_local, &LocalModelsDialog::openRequested, m_window, &MainWindow::startOpenModel);
    }
    m_local->show(); // scans again each time it is shown
    m_local->raise();
    m_local->activateWindow();
}

void ModelMenu::setCurrent(const QString &source)
{
    m_current = source;
    rebuild();
}

void ModelMenu::rebuild()
{
    // Later, not now: rebuild() may run inside one of these actions' triggered() (a recent model).
    for (QMenu *menu : {m_menu, m_recentFile})
        for (QAction *a : menu->actions()) {
            menu->removeAction(a);
            if (a->parent() == menu)
                a->deleteLater();
        }
    if (m_group)
        m_group->deleteLater();
    m_group = new QActionGroup(this);
    const auto entry = [this](QMenu *menu, const QString &text, const QString &source) {
        QAction *a = menu->addAction(text);
        a->setCheckable(true);
        a->setChecked(source == m_current);
        a->setData(source);
        a->setActionGroup(m_group);
        connect(a, &QAction::triggered, m_window, [this, source] {
            if (source.isEmpty())
                m_window->useWordVectors();
            else if (source != m_current)
                m_window->startOpenModel(source);
            else
                setCurrent(m_current); // re-checks the entry the group moved
        });
        return a;
    };
    entry(m_menu, tr("Word vectors (seed notebooks)"), QString())->setObjectName(QStringLiteral("wordVectorsModelAction"));
    for (const QString &arg : {kBundledModelArg, kBundledGpt2Arg, kBundledDatesArg}) {
        QAction *bundled = entry(m_menu, bundledModelTitle(arg), arg);
        bundled->setObjectName(arg == kBundledModelArg  ? QStringLiteral("bundledModelAction")
                               : arg == kBundledGpt2Arg ? QStringLiteral("bundledGpt2ModelAction")
                                                        : QStringLiteral("bundledDatesModelAction"));
        if (bundledModelDir(arg).isEmpty()) {
            bundled->setEnabled(false);
            bundled->setToolTip(tr("This installation does not have this bundled model"));
        }
    }
    m_menu->addSeparator();
    m_menu->addAction(tr("Open model folder…"), m_window, &MainWindow::askModelFolder)
        ->setObjectName(QStringLiteral("openModelFolderAction"));
    m_menu->addAction(tr("On this &computer…"), this, &ModelMenu::showLocalModels)
        ->setObjectName(QStringLiteral("localModelsAction"));
    const QStringList recent = m_loader->recent();
    if (!recent.isEmpty())
        m_menu->addSection(tr("Recent models"));
    for (const QString &source : recent) {
        const QString text = isBundledModelArg(source)
                                 ? bundledModelTitle(source)
                                 : QStringLiteral("%1  (%2)").arg(ModelLoader::title(source), QDir::toNativeSeparators(source));
        if (!isBundledModelArg(source))
            entry(m_menu, text, source);
        QAction *f = m_recentFile->addAction(text, m_window, [this, source] { m_window->startOpenModel(source); });
        f->setData(source);
    }
    if (!isBundledModelArg(m_current) && !m_current.isEmpty() && !recent.contains(m_current))
        entry(m_menu, ModelLoader::title(m_current), m_current);
    m_recentFile->setEnabled(!recent.isEmpty());
}

} // namespace attnviz::ui
