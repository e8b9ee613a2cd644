// SPDX-License-Identifier: GPL-3.0-or-later
#include "window/localmodelsdialog.h"

#include "files/messagetext.h"

#include "attnviz/fileio.h"
#include "localmodels.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <new>
#include <stdexcept>

namespace attnviz::ui {

namespace {

enum Column { Name, Family, Parameters, Size, Precision, Where, Note, Columns };

struct ScanResult {
    StoreScan scan;
    qint64 ms = 0;
};

// "~/.ollama/models": the root as the user thinks of it.
QString shownRoot(const std::string &root)
{
    const QString r = QString::fromStdString(root), home = QDir::homePath();
    return r.startsWith(home + QLatin1Char('/')) ? QStringLiteral("~") + r.mid(home.size()) : r;
}

} // namespace

LocalModelsDialog::LocalModelsDialog(QWidget *parent)
    : QDialog(parent)
{
    setObjectName(QStringLiteral("localModelsDialog"));
    setWindowTitle(tr("Models on this computer"));
    m_list = new QTreeWidget(this);
    m_list->setObjectName(QStringLiteral("localModelsList"));
    m_list->setRootIsDecorated(false);
    m_list->setUniformRowHeights(true);
    m_list->setAlternatingRowColors(true);
    m_list->setColumnCount(Columns);
    m_list->setHeaderLabels({tr("Name"), tr("Family"), tr("Parameters"), tr("Size"), tr("Precision"), tr("Where"),
                             tr("Why it cannot be computed")});
    m_list->headerItem()->setTextAlignment(Parameters, Qt::AlignRight | Qt::AlignVCenter);
    m_list->headerItem()->setTextAlignment(Size, Qt::AlignRight | Qt::AlignVCenter);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("localModelsStatus"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto *buttons = new QDialogButtonBox(this);
    m_open = buttons->addButton(tr("&Open"), QDialogButtonBox::AcceptRole);
    m_open->setObjectName(QStringLiteral("localModelsOpen"));
    QPushButton *add = buttons->addButton(tr("&Add folder…"), QDialogButtonBox::ActionRole);
    add->setObjectName(QStringLiteral("localModelsAddFolder"));
    m_remove = buttons->addButton(tr("&Remove folder"), QDialogButtonBox::ActionRole);
    m_remove->setObjectName(QStringLiteral("localModelsRemoveFolder"));
    m_remove->setToolTip(tr("Stop scanning the folder the selected model was found in"));
    QPushButton *rescanButton = buttons->addButton(tr("Sca&n again"), QDialogButtonBox::ActionRole);
    buttons->addButton(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_open, &QPushButton::clicked, this, [this] { openItem(m_list->currentItem()); });
    connect(add, &QPushButton::clicked, this, &LocalModelsDialog::addFolder);
    connect(m_remove, &QPushButton::clicked, this, &LocalModelsDialog::removeFolder);
    connect(rescanButton, &QPushButton::clicked, this, &LocalModelsDialog::rescan);
    connect(m_list, &QTreeWidget::itemActivated, this, &LocalModelsDialog::openItem);
    connect(m_list, &QTreeWidget::currentItemChanged, this, &LocalModelsDialog::selectionChanged);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_list, 1);
    layout->addWidget(m_status);
    layout->addWidget(buttons);
    m_folderPrompt = [this] { return QFileDialog::getExistingDirectory(this, tr("Add a folder of models")); };
    resize(1100, 520);
    selectionChanged();
}

void LocalModelsDialog::showEvent(QShowEvent *event)
{
    QDialog::showEvent(event);
    rescan();
}

void LocalModelsDialog::rescan()
{
    if (m_scanning) {
        m_again = true; // the folders changed while a scan ran: once more when it ends
        return;
    }
    m_scanning = true;
    m_status->setText(tr("Looking…"));
    auto *watcher = new QFutureWatcher<ScanResult>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher] {
        const ScanResult r = watcher->result();
        watcher->deleteLater();
        m_scanning = false;
        if (m_again) {
            m_again = false;
            rescan();
            return;
        }
        fill(r.scan, r.ms);
    });
    const std::vector<StoreRoot> roots = localModelRoots(); // QSettings read here, on the GUI thread
    watcher->setFuture(QtConcurrent::run([roots] {
        QElapsedTimer t;
        t.start();
        ScanResult r;
        try { // an exception here would reach the event loop through the watcher
            r.scan = scanModelStores(roots);
        } catch (const std::bad_alloc &) {
            r.scan = StoreScan();
            r.scan.problems.push_back("the listing ran out of memory");
        } catch (const std::exception &e) {
            r.scan = StoreScan();
            r.scan.problems.push_back(std::string("the listing failed: ") + e.what());
        }
        r.ms = t.elapsed();
        return r;
    }));
}

void LocalModelsDialog::fill(const StoreScan &scan, qint64 ms)
{
    m_models = scan.models;
    m_list->clear();
    const QColor grey = palette().color(QPalette::Disabled, QPalette::Text);
    int computable = 0;
    for (size_t i = 0; i < m_models.size(); ++i) {
        const LocalModel &m = m_models[i];
        auto *item = new QTreeWidgetItem(m_list);
        const QString where = QString::fromLatin1(modelStoreName(m.store)) + QStringLiteral("  ") + shownRoot(m.root);
        item->setText(Name, shownText(QString::fromStdString(m.name), 200));
        item->setText(Family, QString::fromStdString(m.family));
        item->setText(Parameters, QString::fromStdString(describeParameters(m.parameters)));
        item->setText(Size, m.bytes ? QString::fromStdString(describeBytes(m.bytes)) : QString());
        item->setText(Precision, QString::fromStdString(m.precision));
        item->setText(Where, where);
        item->setText(Note, shownText(QString::fromStdString(m.reason), 300));
        item->setTextAlignment(Parameters, Qt::AlignRight | Qt::AlignVCenter);
        item->setTextAlignment(Size, Qt::AlignRight | Qt::AlignVCenter);
        item->setData(Name, Qt::UserRole, int(i));
        const QString opens = QString::fromStdString(m.spec.empty() ? m.path : m.spec);
        QString tip = tr("%1\nOpens as: %2\nFile: %3").arg(shownText(QString::fromStdString(m.name), 200), shownText(opens, 300),
                                                         shownText(QString::fromStdString(m.path), 300));
        if (!m.supported) {
            for (int c = 0; c < Columns; ++c)
                item->setForeground(c, grey);
            tip += tr("\nattnviz cannot compute it: %1").arg(shownText(QString::fromStdString(m.reason), 400));
        } else {
            ++computable;
        }
        for (int c = 0; c < Columns; ++c)
            item->setToolTip(c, tip);
    }
    for (int c = 0; c < Note; ++c) { // each column as wide as its widest text, and a gap before the next
        m_list->resizeColumnToContents(c);
        m_list->setColumnWidth(c, m_list->columnWidth(c) + fontMetrics().averageCharWidth() * 2);
    }
    QString text = m_models.empty()
                       ? tr("No models found in the Hugging Face cache, Ollama or LM Studio folders, nor in the folders added. "
                            "Add a folder that holds .gguf files or model folders.")
                       : (m_models.size() == 1 ? tr("1 model found in %2 ms; %3 attnviz can compute.")
                                                   : tr("%1 models found in %2 ms; %3 attnviz can compute (the others are "
                                                        "greyed, with why)."))
                             .arg(m_models.size())
                             .arg(ms)
                             .arg(computable);
    if (!scan.problems.empty())
        text += QLatin1Char(' ') + tr("Not read: %1").arg(shownText(QString::fromStdString(scan.problems.front()), 300));
    m_status->setText(text);
    selectionChanged();
    emit scanned();
}

void LocalModelsDialog::selectionChanged()
{
    const QTreeWidgetItem *item = m_list->currentItem();
    const int i = item ? item->data(Name, Qt::UserRole).toInt() : -1;
    const LocalModel *m = i >= 0 && size_t(i) < m_models.size() ? &m_models[size_t(i)] : nullptr;
    m_open->setEnabled(m && m->supported);
    m_remove->setEnabled(m && m->store == ModelStore::Folder);
}

void LocalModelsDialog::openItem(QTreeWidgetItem *item)
{
    const int i = item ? item->data(Name, Qt::UserRole).toInt() : -1;
    if (i < 0 || size_t(i) >= m_models.size())
        return;
    const LocalModel &m = m_models[size_t(i)];
    if (!m.supported) {
        m_status->setText(tr("%1: attnviz cannot compute it: %2")
                              .arg(shownText(QString::fromStdString(m.name), 200), shownText(QString::fromStdString(m.reason), 400)));
        return;
    }
    emit openRequested(QString::fromStdString(m.spec.empty() ? m.path : m.spec));
    accept();
}

void LocalModelsDialog::addFolder()
{
    const QString folder = m_folderPrompt ? m_folderPrompt() : QString();
    if (folder.isEmpty())
        return;
    addUserModelFolder(folder);
    rescan();
}

void LocalModelsDialog::removeFolder()
{
    const QTreeWidgetItem *item = m_list->currentItem();
    const int i = item ? item->data(Name, Qt::UserRole).toInt() : -1;
    if (i < 0 || size_t(i) >= m_models.size() || m_models[size_t(i)].store != ModelStore::Folder)
        return;
    removeUserModelFolder(QString::fromStdString(m_models[size_t(i)].root));
    rescan();
}

} // namespace attnviz::ui
