// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
// Generated from docs/openapi.yaml by Tests/openapi/generate.py: edit the YAML and run it.
// swift-format-ignore-file

/// The HTTP API's OpenAPI 3.1 document (docs/openapi.yaml) as JSON, served at
/// `GET /openapi.json`.
enum OpenAPIDocument {
  static let json = ####"""
  {"openapi":"3.1.0","info":{"title":"Countdown HTTP API","version":"1","summary":"Live Activity t\####
  imers for Linux, over HTTP (`countdown serve --http HOST:PORT`).","description":"The same engine\####
   as the socket protocol (docs/protocol.md), over HTTP (docs/http.md).\nInstants are milliseconds\####
   since 1970 (UTC); durations are milliseconds. Every error is\n`{\"code\",\"message\"}` (docs/er\####
  rors.md) and changes nothing. A server given `--token`\nneeds `Authorization: Bearer TOKEN` on e\####
  very request (or `?token=` for the board page);\na server on loopback without a token needs none\####
  .\n","license":{"name":"Apache-2.0"}},"servers":[{"url":"http://127.0.0.1:8080"}],"security":[{}\####
  ,{"bearer":[]}],"tags":[{"name":"activities"},{"name":"events"},{"name":"board"},{"name":"servic\####
  e"}],"paths":{"/":{"get":{"tags":["board"],"operationId":"board","summary":"The kiosk board page\####
   (HTML, CSS and JavaScript built into the binary).","parameters":[{"name":"controls","in":"query\####
  ","description":"`0` shows no buttons (a screen facing the public), `1` pause, resume and end; e\####
  lse the server's `--board-controls`.","schema":{"type":"string","enum":["0","1"]}},{"$ref":"#/co\####
  mponents/parameters/QueryToken"}],"responses":{"200":{"description":"The page.","content":{"text\####
  /html":{"schema":{"type":"string"}}}},"400":{"$ref":"#/components/responses/BadRequest"},"defaul\####
  t":{"$ref":"#/components/responses/Error"}}}},"/v1/activities":{"get":{"tags":["activities"],"op\####
  erationId":"listActivities","summary":"Every activity, the k soonest ending, or those ended with\####
  in a window.","parameters":[{"name":"soonest","in":"query","description":"The k running countdow\####
  ns that end soonest.","schema":{"type":"integer","minimum":0}},{"name":"endedWithinMs","in":"que\####
  ry","description":"The activities ended within the last w milliseconds.","schema":{"type":"integ\####
  er","minimum":0}}],"responses":{"200":{"description":"The activities at `at`.","content":{"appli\####
  cation/json":{"schema":{"$ref":"#/components/schemas/Listing"}}}},"400":{"$ref":"#/components/re\####
  sponses/BadRequest"},"default":{"$ref":"#/components/responses/Error"}}},"post":{"tags":["activi\####
  ties"],"operationId":"startActivity","summary":"Starts an activity (the socket's `start` without\####
   `op` and `at`).","requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref"\####
  :"#/components/schemas/StartRequest"}}}},"responses":{"201":{"description":"The activity, starte\####
  d.","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Activity"}}}},"400":{"\####
  $ref":"#/components/responses/BadRequest"},"409":{"$ref":"#/components/responses/Conflict"},"413\####
  ":{"$ref":"#/components/responses/TooLarge"},"429":{"$ref":"#/components/responses/LimitReached"\####
  },"503":{"$ref":"#/components/responses/Unavailable"},"default":{"$ref":"#/components/responses/\####
  Error"}}}},"/v1/activities/{id}":{"parameters":[{"$ref":"#/components/parameters/ActivityID"}],"\####
  get":{"tags":["activities"],"operationId":"getActivity","summary":"One activity as it stands now\####
  .","responses":{"200":{"description":"The activity.","content":{"application/json":{"schema":{"$\####
  ref":"#/components/schemas/Activity"}}}},"400":{"$ref":"#/components/responses/BadRequest"},"404\####
  ":{"$ref":"#/components/responses/NotFound"},"default":{"$ref":"#/components/responses/Error"}}}\####
  ,"patch":{"tags":["activities"],"operationId":"updateActivity","summary":"Updates an activity (a\####
   JSON Merge Patch of its content, dates, milestones, `liveActivity`).","requestBody":{"required"\####
  :true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/UpdateRequest"}},"ap\####
  plication/merge-patch+json":{"schema":{"$ref":"#/components/schemas/UpdateRequest"}}}},"response\####
  s":{"200":{"description":"The activity, updated.","content":{"application/json":{"schema":{"$ref\####
  ":"#/components/schemas/Activity"}}}},"400":{"$ref":"#/components/responses/BadRequest"},"404":{\####
  "$ref":"#/components/responses/NotFound"},"409":{"$ref":"#/components/responses/Conflict"},"413"\####
  :{"$ref":"#/components/responses/TooLarge"},"503":{"$ref":"#/components/responses/Unavailable"},\####
  "default":{"$ref":"#/components/responses/Error"}}}},"/v1/activities/{id}/pause":{"parameters":[\####
  {"$ref":"#/components/parameters/ActivityID"}],"post":{"tags":["activities"],"operationId":"paus\####
  eActivity","summary":"Pauses a running activity; its value freezes.","requestBody":{"required":f\####
  alse,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/PauseRequest"}}}},"re\####
  sponses":{"200":{"description":"The activity, paused (pausing a paused one changes nothing).","c\####
  ontent":{"application/json":{"schema":{"$ref":"#/components/schemas/Activity"}}}},"400":{"$ref":\####
  "#/components/responses/BadRequest"},"404":{"$ref":"#/components/responses/NotFound"},"409":{"$r\####
  ef":"#/components/responses/Conflict"},"503":{"$ref":"#/components/responses/Unavailable"},"defa\####
  ult":{"$ref":"#/components/responses/Error"}}}},"/v1/activities/{id}/resume":{"parameters":[{"$r\####
  ef":"#/components/parameters/ActivityID"}],"post":{"tags":["activities"],"operationId":"resumeAc\####
  tivity","summary":"Resumes a paused activity.","requestBody":{"required":false,"content":{"appli\####
  cation/json":{"schema":{"$ref":"#/components/schemas/PauseRequest"}}}},"responses":{"200":{"desc\####
  ription":"The activity, running.","content":{"application/json":{"schema":{"$ref":"#/components/\####
  schemas/Activity"}}}},"400":{"$ref":"#/components/responses/BadRequest"},"404":{"$ref":"#/compon\####
  ents/responses/NotFound"},"409":{"$ref":"#/components/responses/Conflict"},"503":{"$ref":"#/comp\####
  onents/responses/Unavailable"},"default":{"$ref":"#/components/responses/Error"}}}},"/v1/activit\####
  ies/{id}/end":{"parameters":[{"$ref":"#/components/parameters/ActivityID"}],"post":{"tags":["act\####
  ivities"],"operationId":"endActivity","summary":"Ends an activity, with its dismissal and final \####
  content.","requestBody":{"required":false,"content":{"application/json":{"schema":{"$ref":"#/com\####
  ponents/schemas/EndRequest"}}}},"responses":{"200":{"description":"The activity as it stands onc\####
  e ended (even when dismissed at once).","content":{"application/json":{"schema":{"$ref":"#/compo\####
  nents/schemas/Activity"}}}},"400":{"$ref":"#/components/responses/BadRequest"},"404":{"$ref":"#/\####
  components/responses/NotFound"},"409":{"$ref":"#/components/responses/Conflict"},"413":{"$ref":"\####
  #/components/responses/TooLarge"},"503":{"$ref":"#/components/responses/Unavailable"},"default":\####
  {"$ref":"#/components/responses/Error"}}}},"/v1/events":{"get":{"tags":["events"],"operationId":\####
  "events","summary":"A Server-Sent Events stream: `snapshot`, then each event (docs/events.md).",\####
  "parameters":[{"name":"ticks","in":"query","description":"`1` or `true`: ticks too; `0` or `fals\####
  e`: lifecycle events only (the default).","schema":{"type":"string","enum":["0","1","true","fals\####
  e"]}},{"name":"ids","in":"query","description":"Only these activities (comma-separated ids); wit\####
  hout it, every activity, those started later too.","schema":{"type":"string"}},{"$ref":"#/compon\####
  ents/parameters/QueryToken"}],"responses":{"200":{"description":"`retry: 1000`, then `event: sna\####
  pshot` with `data:` `{\"at\":…,\"activities\":[…]}`,\nthen each event as `event: NAME` and `data\####
  :` its JSON object; a `: keep-alive`\ncomment every 15 s. The stream ends when the server stops.\####
  \n","content":{"text/event-stream":{"schema":{"type":"string"}}}},"400":{"$ref":"#/components/re\####
  sponses/BadRequest"},"503":{"$ref":"#/components/responses/Unavailable"},"default":{"$ref":"#/co\####
  mponents/responses/Error"}}}},"/v1/time":{"get":{"tags":["service"],"operationId":"time","summar\####
  y":"The server's clock (the board reads it to show each second when it begins).","responses":{"2\####
  00":{"description":"Now, by the server's clock.","content":{"application/json":{"schema":{"type"\####
  :"object","required":["now"],"properties":{"now":{"$ref":"#/components/schemas/Instant"}}}}}},"d\####
  efault":{"$ref":"#/components/responses/Error"}}}},"/v1/cluster":{"get":{"tags":["service"],"ope\####
  rationId":"cluster","summary":"The cluster as this node sees it (docs/cluster.md); a single serv\####
  er has no node, nodes or shards.","responses":{"200":{"description":"The nodes, and each shard's\####
   owner (null while no live lease holds it) and epoch, as last read from PostgreSQL.","content":{\####
  "application/json":{"schema":{"type":"object","required":["node","nodes","shards"],"properties":\####
  {"node":{"type":["string","null"]},"nodes":{"type":"array","items":{"type":"object","required":[\####
  "name","advertise","alive"],"properties":{"name":{"type":"string"},"advertise":{"type":["string"\####
  ,"null"]},"alive":{"type":"boolean"}}}},"shards":{"type":"array","items":{"type":"object","requi\####
  red":["shard","owner","epoch"],"properties":{"shard":{"type":"integer","minimum":0},"owner":{"ty\####
  pe":["string","null"]},"epoch":{"type":"integer"},"unrestorable":{"type":"string","description":\####
  "Present when this node holds the shard and its rows cannot be restored; why."}}}}}}}}},"default\####
  ":{"$ref":"#/components/responses/Error"}}}},"/metrics":{"get":{"tags":["service"],"operationId"\####
  :"metrics","summary":"Prometheus text (docs/http.md, \"Metrics\").","responses":{"200":{"descrip\####
  tion":"The metrics.","content":{"text/plain":{"schema":{"type":"string"}}}},"default":{"$ref":"#\####
  /components/responses/Error"}}}},"/openapi.json":{"get":{"tags":["service"],"operationId":"opena\####
  pi","summary":"This document, as JSON.","responses":{"200":{"description":"The OpenAPI document.\####
  ","content":{"application/json":{"schema":{"type":"object"}}}},"default":{"$ref":"#/components/r\####
  esponses/Error"}}}}},"components":{"securitySchemes":{"bearer":{"type":"http","scheme":"bearer",\####
  "description":"The server's `--token` (or `--token-file`, `COUNTDOWN_TOKEN`)."}},"parameters":{"\####
  ActivityID":{"name":"id","in":"path","required":true,"description":"The activity's id (percent-e\####
  ncoded in the path).","schema":{"type":"string","minLength":1,"maxLength":128}},"QueryToken":{"n\####
  ame":"token","in":"query","description":"The token, for a browser that cannot send a header (the\####
   board and its event stream).","schema":{"type":"string"}}},"responses":{"BadRequest":{"descript\####
  ion":"`invalidPayload`, `invalidDate` or `outOfOrder`: the message names the field.","content":{\####
  "application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},"NotFound":{"description":\####
  "`notFound`: no activity has that id (never, or dismissed).","content":{"application/json":{"sch\####
  ema":{"$ref":"#/components/schemas/Error"}}}},"Conflict":{"description":"`duplicateID` or `activ\####
  ityEnded`.","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},"To\####
  oLarge":{"description":"`attributesTooLarge`: content over 4096 bytes, or a body over 64 KiB.","\####
  content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},"LimitReached":{\####
  "description":"`limitReached`: `maxActivities` activities exist.","content":{"application/json":\####
  {"schema":{"$ref":"#/components/schemas/Error"}}}},"Unavailable":{"description":"`disabled`, `st\####
  orageFailed` (try again), `shutdown`, or `unavailable` (a cluster node that does not serve the a\####
  ctivity's shard now).","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Err\####
  or"}}}},"Error":{"description":"Any other error: 401 `unauthorized`, 403 `forbidden`, 404 (no su\####
  ch route), 405 (another method; with `Allow`), 413, 421 `misdirected`, 429, 503.","content":{"ap\####
  plication/json":{"schema":{"$ref":"#/components/schemas/Error"}}}}},"schemas":{"Instant":{"type"\####
  :"integer","description":"Milliseconds since 1970 (UTC), from 100000000000 to the end of the yea\####
  r 9999.","minimum":100000000000,"maximum":253402300799999},"Error":{"type":"object","required":[\####
  "code","message"],"properties":{"code":{"type":"string","enum":["invalidPayload","invalidDate","\####
  outOfOrder","timeWentBackwards","lineTooLong","unauthorized","forbidden","notFound","misdirected\####
  ","duplicateID","activityEnded","attributesTooLarge","limitReached","disabled","storageFailed","\####
  shutdown","unavailable","slowConsumer","systemError"]},"message":{"type":"string"}}},"Listing":{\####
  "type":"object","required":["at","activities"],"properties":{"at":{"$ref":"#/components/schemas/\####
  Instant"},"servedShards":{"type":"array","description":"A cluster node without --cluster-token l\####
  ists only the shards it serves, and names them here (docs/cluster.md).","items":{"type":"integer\####
  ","minimum":0}},"activities":{"type":"array","items":{"$ref":"#/components/schemas/Activity"}}}}\####
  ,"Content":{"type":"object","description":"What an activity shows (docs/activities.md); its cano\####
  nical JSON is at most 4096 bytes.","properties":{"title":{"type":"string"},"subtitle":{"type":"s\####
  tring"},"alertMessage":{"type":"string"},"color":{"type":"string","pattern":"^#([0-9A-Fa-f]{6}|[\####
  0-9A-Fa-f]{8})$"},"fields":{"type":"object"},"relevance":{"type":"number"}}},"Milestone":{"type"\####
  :"object","additionalProperties":false,"required":["name","atMs"],"properties":{"name":{"type":"\####
  string"},"atMs":{"type":"integer","description":"For a countdown, milliseconds before its end (n\####
  egative with overtime, after it); for an elapsed timer, elapsed milliseconds."},"content":{"type\####
  ":"object","description":"A merge patch of the content, applied at the milestone's instant."}}},\####
  "LiveActivity":{"type":"object","additionalProperties":false,"description":"The iPhone Live Acti\####
  vity it drives (docs/pushes.md).","properties":{"pushTokens":{"type":"object","additionalPropert\####
  ies":{"type":["boolean","null"]}},"startTokens":{"type":"object","additionalProperties":{"type":\####
  ["boolean","null"]}},"attributesType":{"type":"string"},"attributes":{"type":"object"},"keys":{"\####
  type":"object","additionalProperties":{"type":"string"}},"dateEncoding":{"type":"string","enum":\####
  ["reference","unix","unixMs","iso8601"]},"priority":{"type":"integer","enum":[5,10]},"sound":{"t\####
  ype":["string","null"],"minLength":1,"description":"`aps.alert.sound` of the pushes that carry a\####
  n alert: a sound file of the app, or `default`."},"channel":{"type":["string","null"],"pattern":\####
  "^(create|[A-Za-z0-9+/]+={0,2})$","description":"A broadcast channel (iOS 18, `--apns-channels`)\####
  : `create` (the server makes one through APNs's channel management API) or a channel id the call\####
  er made (base64). Given at the start only (docs/pushes.md, \"Broadcast channels\")."},"channelId\####
  ":{"type":["string","null"],"readOnly":true,"description":"The channel the activity's updates an\####
  d end are broadcast on: the caller's id, or the one APNs made (null until it has answered). Set \####
  by the server; the app's backend hands it to the phones (`pushType: .channel(id)`)."}}},"Dismiss\####
  al":{"description":"`immediate`, `default` (four hours after the end) or `{\"after\": instant}`.\####
  ","oneOf":[{"type":"string","enum":["immediate","default"]},{"type":"object","required":["after"\####
  ],"additionalProperties":false,"properties":{"after":{"$ref":"#/components/schemas/Instant"}}}]}\####
  ,"StartRequest":{"type":"object","additionalProperties":false,"required":["kind","title"],"prope\####
  rties":{"id":{"type":"string","minLength":1,"maxLength":128},"kind":{"type":"string","enum":["co\####
  untdown","elapsed"]},"endDate":{"$ref":"#/components/schemas/Instant"},"startDate":{"$ref":"#/co\####
  mponents/schemas/Instant"},"goalMs":{"type":"integer","minimum":0},"title":{"type":"string"},"su\####
  btitle":{"type":"string"},"alertMessage":{"type":"string"},"color":{"type":"string","pattern":"^\####
  #([0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$"},"fields":{"type":"object"},"relevance":{"type":"number"},"st\####
  aleDate":{"$ref":"#/components/schemas/Instant"},"milestones":{"type":"array","items":{"$ref":"#\####
  /components/schemas/Milestone"}},"endOnExpiry":{"$ref":"#/components/schemas/Dismissal"},"overti\####
  me":{"type":"boolean"},"liveActivity":{"$ref":"#/components/schemas/LiveActivity"}}},"UpdateRequ\####
  est":{"type":"object","additionalProperties":false,"description":"A merge patch; `null` removes \####
  a member where the member may be absent.","properties":{"title":{"type":"string"},"subtitle":{"t\####
  ype":["string","null"]},"alertMessage":{"type":["string","null"]},"color":{"oneOf":[{"type":"str\####
  ing","pattern":"^#([0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$"},{"type":"null"}]},"fields":{"type":["object\####
  ","null"]},"relevance":{"type":["number","null"]},"endDate":{"$ref":"#/components/schemas/Instan\####
  t"},"startDate":{"$ref":"#/components/schemas/Instant"},"staleDate":{"oneOf":[{"$ref":"#/compone\####
  nts/schemas/Instant"},{"type":"null"}]},"milestones":{"type":"array","items":{"$ref":"#/componen\####
  ts/schemas/Milestone"}},"endOnExpiry":{"oneOf":[{"$ref":"#/components/schemas/Dismissal"},{"type\####
  ":"null"}]},"overtime":{"type":"boolean"},"timestamp":{"$ref":"#/components/schemas/Instant"},"l\####
  iveActivity":{"oneOf":[{"$ref":"#/components/schemas/LiveActivity"},{"type":"null"}]}}},"PauseRe\####
  quest":{"type":"object","additionalProperties":false,"properties":{"timestamp":{"$ref":"#/compon\####
  ents/schemas/Instant"}}},"EndRequest":{"type":"object","additionalProperties":false,"properties"\####
  :{"dismissal":{"$ref":"#/components/schemas/Dismissal"},"timestamp":{"$ref":"#/components/schema\####
  s/Instant"},"title":{"type":"string"},"subtitle":{"type":["string","null"]},"alertMessage":{"typ\####
  e":["string","null"]},"color":{"oneOf":[{"type":"string","pattern":"^#([0-9A-Fa-f]{6}|[0-9A-Fa-f\####
  ]{8})$"},{"type":"null"}]},"fields":{"type":["object","null"]},"relevance":{"type":["number","nu\####
  ll"]}}},"Activity":{"type":"object","description":"An activity object (docs/protocol.md, \"Activ\####
  ity objects\").","required":["id","kind","phase","value","text","progress","stale","overtime","c\####
  ontent","endDate","startDate","pausedAt","goalMs","milestone","nextMilestone","liveActivity"],"p\####
  roperties":{"id":{"type":"string"},"kind":{"type":"string","enum":["countdown","elapsed"]},"phas\####
  e":{"type":"string","enum":["active","paused","ended"]},"value":{"type":"integer","description":\####
  "The whole seconds shown (negative past the end of a countdown in overtime)."},"text":{"type":"s\####
  tring","description":"The value in the server's `--style`."},"progress":{"type":["number","null"\####
  ],"minimum":0,"maximum":1},"stale":{"type":"boolean"},"overtime":{"type":"boolean"},"content":{"\####
  $ref":"#/components/schemas/Content"},"endDate":{"oneOf":[{"$ref":"#/components/schemas/Instant"\####
  },{"type":"null"}]},"startDate":{"oneOf":[{"$ref":"#/components/schemas/Instant"},{"type":"null"\####
  }]},"pausedAt":{"oneOf":[{"$ref":"#/components/schemas/Instant"},{"type":"null"}]},"goalMs":{"ty\####
  pe":["integer","null"]},"milestone":{"type":["string","null"]},"nextMilestone":{"oneOf":[{"type"\####
  :"object","required":["name","at"],"properties":{"name":{"type":"string"},"at":{"type":"integer"\####
  }}},{"type":"null"}]},"liveActivity":{"oneOf":[{"$ref":"#/components/schemas/LiveActivity"},{"ty\####
  pe":"null"}]},"shard":{"type":"integer","minimum":0,"description":"The activity's shard; only fr\####
  om a cluster node (docs/cluster.md)."}}}}}}
  """####
}
