#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  return moesim::cli::run_cli(argc, argv, std::cout, std::cerr);
}
