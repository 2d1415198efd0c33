// Native capture format reader (owner: agent component).
