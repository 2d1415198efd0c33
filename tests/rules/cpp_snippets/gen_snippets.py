# Writes one C++ file with every rule's LibTorch fix snippet (rules/*.json, fix.cpp) as the body of its own
# function, #include lines hoisted to the top, so that the build compiles each snippet against LibTorch.
# Usage: gen_snippets.py RULES_DIR OUT.cpp
import json, glob, sys, re
rules_dir, out = sys.argv[1], sys.argv[2]
includes, bodies = set(), []
for f in sorted(glob.glob(rules_dir + '/*.json')):
    if f.endswith('schema.json'): continue
    r = json.load(open(f))
    cpp = r.get('fix', {}).get('cpp')
    if cpp is None: continue
    lines = cpp if isinstance(cpp, list) else cpp.split('\n')
    body = []
    for l in lines:
        if l.strip().startswith('#include'): includes.add(l.strip())
        else: body.append(l)
    fn = re.sub(r'[^A-Za-z0-9]', '_', r['id'])
    bodies.append((fn, body))
with open(out, 'w') as o:
    o.write('// Generated from rules/*.json: every LibTorch fix snippet, compiled in a generic training context.\n')
    o.write('#include <torch/torch.h>\n#include <cstdlib>\n#include <iostream>\n#include <thread>\n')
    for inc in sorted(includes): o.write(inc + '\n')
    o.write('#include "snippet_context.h"\n\n')
    for fn, body in bodies:
        o.write('void snippet_%s() {\n  PT_SNIPPET_CONTEXT\n  {\n' % fn)
        for l in body: o.write('    ' + l + '\n')
        o.write('  }\n}\n\n')
    o.write('int pt_rule_snippet_count = %d;\n' % len(bodies))
