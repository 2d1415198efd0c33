// diff of two reports (owner: report component).
