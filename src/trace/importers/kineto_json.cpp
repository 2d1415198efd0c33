// Kineto Chrome-trace JSON importer (owner: trace component).
