--------------------------------------------------------------------------------------------------
-- Static logic (templates/job_submit_logic.lua of slurm-supernode). Per job it reads only the
-- SITE table above: no I/O, no shelling out, no loops over nodes (it runs inside slurmctld under
-- its locks). Only strategy "auto" reads files, once, when slurmctld loads this script (below).
--
-- For a job in one of SITE.partitions (no partition given: the default partition):
--   * node count: -N (min_nodes); else ceil(--gpus / GPUs per node); else ceil(-n /
--     --ntasks-per-node); else 1. Rounded UP to whole super nodes; min_nodes = max_nodes = that.
--     With SITE.small_jobs = "aligned", a count that fits in one super node is kept as it is
--     (min_nodes = max_nodes = n) and only placed inside one super node (the constraint below);
--     only counts over one super node are rounded.
--   * one super node:  --constraint=[sn0|sn1|...] (matching OR: all nodes share one feature),
--     AND-ed with the job's own constraint if it has one;
--   * k > 1 super nodes: strategy block -> --segment=<size> (topology/block) where the plugin
--     has the segment_size field (Slurm >= 25.11.2); Slurm 24.11's plugin has none, so the job
--     keeps its whole-super-node count and the user is told to add --segment themselves;
--     strategy switches -> --switches=k (best effort); features -> rejected with a hint to
--     use 'snrun -S k' (a heterogeneous job of k one-super-node components: exact everywhere);
--     auto -> block where the partition's topology is a block one (see detect_strategy), else
--     as features;
--   * more nodes than the partition's super nodes hold: rejected at submit with a message.
-- A job with --segment=S (seen only where job_submit/lua has the segment_size field: Slurm
-- >= 25.11.2; on older plugins the field reads nil and the job is handled as above): S must
-- keep every segment on whole super nodes as SITE.small_jobs says (segment_check below), and
-- the node count must be a whole number of segments; else it is refused at submit, with the
-- sizes that are allowed. Its node count is otherwise left as it is.
-- Left alone: jobs whose constraint already names a super node feature (snrun's own components,
-- snrun --allow-partial), and every other partition.
--------------------------------------------------------------------------------------------------

local NO_VAL = slurm.NO_VAL or 4294967294
local NO_VAL16 = slurm.NO_VAL16 or 65534

-- A numeric job_desc field the user actually set (unset fields read as NO_VAL*, 0 or nil).
local function is_set(value, no_val)
   return value ~= nil and value > 0 and value < no_val
end

-- A count from job_desc as a whole number. job_submit/lua pushes every number with
-- lua_pushnumber: under Lua 5.3+ (what a Slurm built from source may link) that is a float,
-- which prints as "3.0"; math.floor gives an integer there (and changes nothing in Lua 5.1).
local function whole(value)
   return math.floor(value)
end

local function words(s, sep)
   local out = {}
   for w in string.gmatch(s or "", "[^" .. sep .. "]+") do
      out[#out + 1] = w
   end
   return out
end

-- Does a --constraint expression name one of the site's super node features?
local function names_supernode(features)
   if features == nil or features == "" then
      return false
   end
   for w in string.gmatch(features, "[^&|%[%]%*,:%(%)!{}<>=\"' \t]+") do
      if SITE.features[w] then
         return true
      end
   end
   return false
end

-- The partition a job goes to: its own, else the partition flagged Default in slurm.conf.
local function partition_of(job_desc, part_list)
   local p = job_desc.partition
   if p ~= nil and p ~= "" then
      return p
   end
   if part_list ~= nil then
      for name, part in pairs(part_list) do
         if part.flag_default == 1 then
            return name
         end
      end
   end
   return SITE.default_partition
end

-- GPUs per job from tres_per_job ("gres:gpu:16", "gres/gpu:h100:16"), or nil.
local function gpus_per_job(tres)
   if tres == nil or SITE.gres_name == "" then
      return nil
   end
   for _, item in ipairs(words(tres, ",")) do
      local parts = words(item, ":/")
      if #parts >= 3 and parts[1] == "gres" and parts[2] == SITE.gres_name then
         local n = tonumber(parts[#parts])
         if n ~= nil and n > 0 then
            return n
         end
      end
   end
   return nil
end

-- Nodes the job asks for, and how we know (for the message).
local function wanted_nodes(job_desc, part)
   if is_set(job_desc.min_nodes, NO_VAL) then
      local n = whole(job_desc.min_nodes)
      return n, "-N " .. n
   end
   local gpus = gpus_per_job(job_desc.tres_per_job)
   if gpus ~= nil and part.devices > 0 then
      local n = math.ceil(gpus / part.devices)
      return n, string.format("--gpus=%d (%d nodes of %d GPUs)", gpus, n, part.devices)
   end
   local tasks, per_node = job_desc.num_tasks, job_desc.ntasks_per_node
   if is_set(tasks, NO_VAL) and is_set(per_node, NO_VAL16) then
      tasks, per_node = whole(tasks), whole(per_node)
      local n = math.ceil(tasks / per_node)
      return n, string.format("-n %d --ntasks-per-node=%d (%d nodes)", tasks, per_node, n)
   end
   return 1, "a job without -N (1 node)"
end

-- Strategy "auto", decided from the Slurm that runs this script: slurmctld reads job_submit.lua
-- from the folder of its slurm.conf, and takes its topology from topology.yaml in that folder
-- when the file exists (Slurm >= 25.05; the cluster_default topology, or the one a partition
-- names with Topology=), else from TopologyPlugin in slurm.conf. Read once, at load: slurmctld
-- loads the script again when it restarts or the file changes, never per job.
local function read_lines(path)
   local f = io.open(path, "r")
   if f == nil then
      return nil
   end
   local lines = {}
   for line in f:lines() do
      lines[#lines + 1] = line
   end
   f:close()
   return lines
end

-- slurm.conf: TopologyPlugin and each partition's Topology= (keys are case-insensitive;
-- Include lines are followed, relative paths from the folder of slurm.conf).
local function read_slurm_conf(path, dir, conf, depth)
   local lines = read_lines(path)
   if lines == nil or depth > 8 then
      return conf
   end
   for _, raw in ipairs(lines) do
      local line = string.gsub(raw, "#.*$", "")
      local inc = string.match(line, "^%s*[Ii][Nn][Cc][Ll][Uu][Dd][Ee]%s+(%S+)")
      if inc ~= nil then
         if string.sub(inc, 1, 1) ~= "/" then
            inc = dir .. "/" .. inc
         end
         read_slurm_conf(inc, dir, conf, depth + 1)
      else
         local pairs_on_line = {}
         for key, value in string.gmatch(line, "([%w_]+)%s*=%s*\"?([^%s\"]*)\"?") do
            pairs_on_line[string.lower(key)] = value
         end
         if pairs_on_line.topologyplugin ~= nil then
            conf.plugin = string.lower(pairs_on_line.topologyplugin)
         end
         local pname = pairs_on_line.partitionname
         if pname ~= nil and pairs_on_line.topology ~= nil then
            for _, name in ipairs(words(pname, ",")) do
               conf.partition_topology[name] = pairs_on_line.topology
            end
         end
      end
   end
   return conf
end

-- topology.yaml: name -> kind ("block", "tree", "flat") of each topology, and the default.
local function read_topology_yaml(path)
   local lines = read_lines(path)
   if lines == nil then
      return nil
   end
   local kinds, order, default, current = {}, {}, nil, nil
   for _, line in ipairs(lines) do
      local name = string.match(line, "^%s*-%s*topology:%s*[\"']?([^%s\"']+)")
      if name ~= nil then
         current = name
         order[#order + 1] = name
      elseif current ~= nil then
         if string.match(line, "^%s+cluster_default:%s*[Tt]rue") and default == nil then
            default = current
         end
         local kind = string.match(line, "^%s+(%a+):%s*$")
         if kind == "block" or kind == "tree" or kind == "flat" then
            kinds[current] = kinds[current] or kind
         end
      end
   end
   return { kinds = kinds, default = default or order[1] }
end

-- The strategy for partition pname when SITE.strategy is "auto", and why (for the log).
local function detect_strategy(pname, dir)
   -- slurmctld's own file: SLURM_CONF where it lies in this folder (another name), else
   -- slurm.conf here
   local conf_path = os.getenv("SLURM_CONF")
   if conf_path == nil or string.match(conf_path, "^(.*)/[^/]*$") ~= dir then
      conf_path = dir .. "/slurm.conf"
   end
   local conf = read_slurm_conf(conf_path, dir, { partition_topology = {} }, 0)
   local yaml = read_topology_yaml(dir .. "/topology.yaml")
   local kind, source
   if yaml ~= nil then
      local name = conf.partition_topology[pname] or yaml.default
      kind, source = yaml.kinds[name], dir .. "/topology.yaml (topology " .. tostring(name) .. ")"
   elseif conf.plugin ~= nil then
      kind, source = string.match(conf.plugin, "([%a_]+)$"), conf_path .. " (TopologyPlugin)"
   else
      source = conf_path .. " (no TopologyPlugin, no topology.yaml)"
   end
   if kind == "block" then
      return "block", "topology/block in " .. source
   end
   return "features", "topology " .. tostring(kind or "none") .. " in " .. source
end

local function script_dir()
   local source = debug.getinfo(1, "S").source or ""
   return string.match(source, "^@(.*)/[^/]*$") or "."
end

local function plural(n, word)
   if n == 1 then
      return n .. " " .. word
   end
   return n .. " " .. word .. "s"
end

-- Whole super nodes that hold n nodes: {class, k}. The rule is snrun's (site/rounding.py),
-- evaluated by the exporter into ROUND_ANY / ROUND_ONE: looked up here, never recomputed.
-- multi=false: one super node only. nil when nothing fits.
local function round_up(part, n, multi)
   local entry = (multi and ROUND_ANY or ROUND_ONE)[n]
   if not entry then
      return nil
   end
   return { class = part.classes[entry[1]], k = entry[2] }
end

local function capacity(part)
   local most, text = 0, {}
   for _, class in ipairs(part.classes) do
      most = math.max(most, class.size * class.count)
      text[#text + 1] = plural(class.count, "super node") .. " of " .. class.size
   end
   return most, table.concat(text, ", ")
end

-- small_jobs "aligned": the matching-OR list of every super node that holds n nodes (any size
-- class as big as n), so a job kept at its size may start in any of them.
local function fitting_constraint(part, n)
   local names = {}
   for _, class in ipairs(part.classes) do
      if class.size >= n then
         names[#names + 1] = class.constraint
      end
   end
   return table.concat(names, "|")
end

local function reject(msg)
   slurm.log_user("%s", "snrun job_submit: " .. msg) -- log_user formats: keep % literal
   return slurm.ESLURM_INVALID_NODE_COUNT or slurm.ERROR
end

-- Whether log_user() in slurm_job_modify reaches the user: job_submit/lua got that in Slurm
-- 23.02, together with all of Slurm's error codes (before, only eight ESLURM_* names were
-- set), so the running plugin tells by a code that only the full table has. Before 23.02 the
-- text is dropped (the user sees only "Node count specification invalid"): the refusal then
-- goes to slurmctld's log, and docs/admin.md tells users what the rule is and where to look.
local MODIFY_SPEAKS = slurm.ESLURM_INVALID_JOB_ID ~= nil

local function reject_modify(job_rec, msg)
   local id = job_rec and job_rec.job_id
   slurm.log_info("%s", string.format("snrun job_submit: job %s update refused: %s",
                                      tostring(id and whole(id) or "?"), msg))
   if MODIFY_SPEAKS then
      return reject(msg)
   end
   return slurm.ESLURM_INVALID_NODE_COUNT or slurm.ERROR
end

-- Apply the whole-super-node rule to job_desc for partition name pname. own_features: the
-- constraint the job has now (on modify, the job record's when the update does not set one).
local function enforce(job_desc, pname, own_features, n, how)
   local part = SITE.partitions[pname]
   local multi = part.strategy == "block" or part.strategy == "switches"
   local plan = round_up(part, n, multi)
   if plan == nil then
      local most, what = capacity(part)
      local any = round_up(part, n, true)
      if any ~= nil then
         return reject(string.format(
            "partition %s runs jobs on whole super nodes; %s needs %s of %d nodes, and a plain"
               .. " job gets only one here. Use 'snrun -S %d' (or a heterogeneous job of %d"
               .. " components, each -N %d --constraint=[%s] --exclusive).",
            pname, how, plural(any.k, "super node"), any.class.size, any.k, any.k,
            any.class.size, any.class.constraint))
      end
      return reject(string.format(
         "partition %s runs jobs on whole super nodes (%s): %s can never fit; ask for at most"
            .. " %d nodes.", pname, what, how, most))
   end
   local size, k = plan.class.size, plan.k
   local total = size * k
   local constraint = plan.class.constraint
   if k == 1 and SITE.small_jobs == "aligned" then
      total, constraint = n, fitting_constraint(part, n)
   end
   job_desc.min_nodes = total
   job_desc.max_nodes = total
   local where
   if k == 1 then
      local c = "[" .. constraint .. "]"
      if own_features ~= nil and own_features ~= "" then
         -- AND the job's own constraint; an OR list of its own goes in parentheses.
         if string.find(own_features, "|", 1, true) and not string.find(own_features, "[", 1, true) then
            c = "(" .. own_features .. ")&" .. c
         else
            c = own_features .. "&" .. c
         end
      end
      job_desc.features = c
      where = "one super node of " .. constraint
   elseif part.strategy == "block" and job_desc.segment_size ~= nil then
      -- The plugin has the field (Slurm 26.05 reads 0 or NO_VAL16 when unset): set it.
      job_desc.segment_size = size
      where = plural(k, "super node") .. " (--segment=" .. size .. ")"
   elseif part.strategy == "block" then
      -- Slurm 24.11's job_submit/lua has no segment_size field: it can neither be set nor
      -- read here (setting it only logs "unrecognized field"). Say so, and what to type.
      where = plural(k, "super node") .. " (no segment set: this Slurm's job_submit/lua has"
         .. " no segment field)"
      slurm.log_user("snrun job_submit: partition %s: this Slurm's job_submit/lua can neither"
                        .. " set nor see --segment; unless you passed --segment=%d, the job"
                        .. " waits for %d nodes in one aligned block aggregate. 'sbatch -N %d"
                        .. " --segment=%d' or 'snrun -S %d' runs it on any %d whole super nodes.",
                     pname, size, total, total, size, k, k)
   else
      job_desc.req_switch = k
      where = plural(k, "super node") .. " (--switches=" .. k .. ", best effort)"
   end
   if total ~= n then
      slurm.log_user("snrun job_submit: partition %s runs jobs on whole super nodes: %s became"
                        .. " -N %d on %s", pname, how, total, where)
   end
   slurm.log_info("snrun job_submit: partition %s: %s -> %d nodes on %s", pname, how, total,
                  where)
   return slurm.SUCCESS
end

-- --segment=S against the site's super nodes (any size class of the partition):
--   small_jobs "whole":   S is the size of a super node: each segment is one whole super node
--                         (a smaller segment would share a super node with another job, a
--                         larger one would span two NVLink domains);
--   small_jobs "aligned": S divides the size of a super node: segments tile super nodes with
--                         no remainder, none crosses one (like a small job kept inside one).
local function segment_fits(part, s)
   for _, class in ipairs(part.classes) do
      if s == class.size or (SITE.small_jobs == "aligned" and class.size % s == 0) then
         return true
      end
   end
   return false
end

-- The segment sizes segment_fits allows, as text ("4", "1, 2, 3, 6, 9, 18"); runs only on a
-- refusal, bounded by the super node size.
local function segment_sizes(part)
   local seen, list = {}, {}
   for _, class in ipairs(part.classes) do
      local lo = class.size
      if SITE.small_jobs == "aligned" then
         lo = 1
      end
      for s = lo, class.size do
         if class.size % s == 0 and not seen[s] then
            seen[s] = true
            list[#list + 1] = s
         end
      end
   end
   table.sort(list)
   return table.concat(list, ", ")
end

local function check_segment(job_desc, pname)
   local part = SITE.partitions[pname]
   local s = whole(job_desc.segment_size)
   if not segment_fits(part, s) then
      local rule = "a segment is one whole super node"
      if SITE.small_jobs == "aligned" then
         rule = "a segment must divide a super node"
      end
      return reject(string.format(
         "partition %s runs jobs on whole super nodes: --segment=%d does not fit them (%s;"
            .. " the partition has %s). Use --segment=%s, or 'snrun -S K'.",
         pname, s, rule, select(2, capacity(part)), segment_sizes(part)))
   end
   local n, how = wanted_nodes(job_desc, part)
   if n % s ~= 0 then
      local lower, upper = n - n % s, n - n % s + s
      local hint = "-N " .. upper
      if lower > 0 then
         hint = "-N " .. lower .. " or " .. hint
      end
      return reject(string.format(
         "partition %s: %s is not a whole number of --segment=%d segments; use %s.",
         pname, how, s, hint))
   end
   slurm.log_info("snrun job_submit: partition %s: %s --segment=%d accepted (%s)", pname, how, s,
                  plural(math.floor(n / s), "segment"))
   return slurm.SUCCESS
end

-- The enforced partition of a job, nil when none; a string (message) for a bad mix.
local function enforced_partition(pspec)
   local names = words(pspec, ",")
   local hit, miss = nil, nil
   for _, name in ipairs(names) do
      if SITE.partitions[name] ~= nil then
         hit = hit or name
      else
         miss = miss or name
      end
   end
   if hit ~= nil and miss ~= nil then
      return nil, string.format(
         "partitions %s mix a whole-super-node partition (%s) with another (%s); submit to"
            .. " one of them", pspec, hit, miss)
   end
   return hit, nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   local pname, bad = enforced_partition(partition_of(job_desc, part_list))
   if bad ~= nil then
      return reject(bad)
   end
   if pname == nil then
      return slurm.SUCCESS -- not a super node partition: untouched
   end
   if names_supernode(job_desc.features) then
      return slurm.SUCCESS -- already placed on super nodes (snrun's components, --allow-partial)
   end
   if is_set(job_desc.segment_size, NO_VAL16) then
      return check_segment(job_desc, pname) -- --segment given (Slurm >= 25.11.2 shows it)
   end
   local n, how = wanted_nodes(job_desc, SITE.partitions[pname])
   return enforce(job_desc, pname, job_desc.features, n, how)
end

-- Modify (scontrol update JobId=.. NumNodes=..): a new node count must itself be whole super
-- nodes (the constraint or segment set at submit stays as it is, so nothing is re-planned);
-- otherwise the update is refused with the count to use. Partition moves are not re-checked.
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   if not is_set(job_desc.min_nodes, NO_VAL) then
      return slurm.SUCCESS
   end
   local n = whole(job_desc.min_nodes)
   local pspec = job_desc.partition
   if pspec == nil or pspec == "" then
      pspec = job_rec.partition
   end
   local pname, bad = enforced_partition(pspec or "")
   if bad ~= nil then
      return reject_modify(job_rec, bad)
   end
   if pname == nil then
      return slurm.SUCCESS
   end
   local part = SITE.partitions[pname]
   local multi = part.strategy == "block" or part.strategy == "switches"
   local plan = round_up(part, n, multi)
   if plan == nil then
      local most, what = capacity(SITE.partitions[pname])
      return reject_modify(job_rec, string.format(
         "partition %s runs jobs on whole super nodes (%s): NumNodes=%d does not fit; at most"
            .. " %d nodes (and only one super node per plain job unless the site uses block).",
         pname, what, n, most))
   end
   local total = plan.k * plan.class.size
   if plan.k == 1 and SITE.small_jobs == "aligned" then
      total = n -- kept at its size (its constraint, set at submit, keeps it in one super node)
   end
   if total ~= n then
      return reject_modify(job_rec, string.format(
         "partition %s runs jobs on whole super nodes: NumNodes=%d is not whole; use"
            .. " NumNodes=%d", pname, n, total))
   end
   job_desc.max_nodes = n
   if part.strategy == "switches" then
      job_desc.req_switch = plan.k
   end
   return slurm.SUCCESS
end

-- Each enforced partition's strategy, decided now (at load) for "auto".
for pname, part in pairs(SITE.partitions) do
   part.strategy = SITE.strategy
   if SITE.strategy == "auto" then
      local why
      part.strategy, why = detect_strategy(pname, script_dir())
      slurm.log_info("snrun job_submit: partition %s: strategy auto -> %s (%s)", pname,
                     part.strategy, why)
   end
end

slurm.log_info("snrun job_submit: loaded for site %s (%d super node partitions, jobs below one"
                  .. " super node: %s; refused updates explained %s)", SITE.name,
               SITE.partition_count, SITE.small_jobs,
               MODIFY_SPEAKS and "to the user" or "in this log only (Slurm < 23.02)")
return slurm.SUCCESS
