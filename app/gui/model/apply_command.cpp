#include "apply_command.hpp"

namespace tf::gui {

ApplyCommand::ApplyCommand(ImageDocument* document, DocumentState before, DocumentState after, ChainSettings chain,
                           SetChain set_chain, const QString& text)
    : document_(document),
      before_(std::move(before)),
      after_(std::move(after)),
      chain_(std::move(chain)),
      set_chain_(std::move(set_chain)) {
  setText(text);
}

void ApplyCommand::redo() {
  document_->set_state(after_);
  ChainSettings emptied = chain_;
  emptied.filters.clear();
  set_chain_(emptied);
}

void ApplyCommand::undo() {
  document_->set_state(before_);
  set_chain_(chain_);
}

}  // namespace tf::gui
