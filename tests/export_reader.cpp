// The fresh-process half of the export test: loads the functions test_export's "fresh-process files"
// case saved (manifest.txt in the directory given as argv[1]), in a process that links nothing but
// fluxion::fluxion (no test registry, none of the original C++), runs each on the saved inputs and
// compares the outputs with the saved ones bit for bit. Exit status 0 when every file matches.
#include <fstream>
#include <iostream>
#include <string>

#include <fluxion/fluxion.hpp>

#include "export_util.hpp"

int main(int argc, char** argv) {
  namespace fx = fluxion;
  if (argc != 2) {
    std::cerr << "usage: export_reader <directory written by test_export>\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::ifstream manifest(dir + "/manifest.txt");
  if (!manifest) {
    std::cerr << "export_reader: no " << dir << "/manifest.txt\n";
    return 2;
  }
  size_t checked = 0, failed = 0;
  std::string name;
  while (std::getline(manifest, name)) {
    for (const char* ext : {".fxt", ".fxb"}) {
      const std::string file = dir + "/" + name + ext;
      try {
        fx::Exported g = fx::load_exported(file);
        std::vector<fx::Tensor> got = g.call_flat(fx::load_tensors(dir + "/" + name + ".in"));
        std::string m = export_test::bit_mismatch(got, fx::load_tensors(dir + "/" + name + ".out"));
        if (!m.empty()) {
          std::cerr << file << ": " << m << "\n";
          ++failed;
        }
      } catch (const std::exception& e) {
        std::cerr << file << ": " << e.what() << "\n";
        ++failed;
      }
      ++checked;
    }
  }
  std::cout << "export_reader: " << checked << " files, " << failed << " mismatches\n";
  return failed == 0 && checked >= 300 ? 0 : 1;
}
