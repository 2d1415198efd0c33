#include "workload_main.h"

int main(int argc, char** argv) { return profile_train::workload::workload_main(argc, argv); }
