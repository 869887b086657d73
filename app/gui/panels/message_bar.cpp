#include "message_bar.hpp"

#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>
#include <QTimer>
#include <QToolButton>

namespace tf::gui {

MessageBar::MessageBar(QWidget* parent) : QFrame(parent) {
  setObjectName("messageBar");
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(10, 6, 6, 6);
  icon_ = new QLabel(this);
  text_ = new QLabel(this);
  text_->setObjectName("messageText");
  text_->setWordWrap(true);
  text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* close = new QToolButton(this);
  close->setAutoRaise(true);
  close->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
  close->setToolTip(tr("Dismiss"));
  layout->addWidget(icon_);
  layout->addWidget(text_, 1);
  layout->addWidget(close);
  timer_ = new QTimer(this);
  timer_->setSingleShot(true);
  connect(timer_, &QTimer::timeout, this, &QWidget::hide);
  connect(close, &QToolButton::clicked, this, &QWidget::hide);
  hide();
}

void MessageBar::show_message(Level level, const QString& text, int timeout_ms) {
  level_ = level;
  const char* colors[] = {"#2d4f6e", "#6b5320", "#6e2d2d"};
  const char* borders[] = {"#4e86b8", "#c99a35", "#c55a5a"};
  const int i = static_cast<int>(level);
  setStyleSheet(QStringLiteral("tf--gui--MessageBar { background: %1; border: 1px solid %2; border-radius: 4px; }"
                               " QLabel { color: #f0f0f0; }")
                    .arg(colors[i], borders[i]));
  const QStyle::StandardPixmap icons[] = {QStyle::SP_MessageBoxInformation, QStyle::SP_MessageBoxWarning,
                                          QStyle::SP_MessageBoxCritical};
  icon_->setPixmap(style()->standardIcon(icons[i]).pixmap(20, 20));
  text_->setText(text);
  show();
  if (timeout_ms > 0) timer_->start(timeout_ms);
  else timer_->stop();
}

QString MessageBar::text() const { return isVisible() ? text_->text() : QString(); }

}  // namespace tf::gui
