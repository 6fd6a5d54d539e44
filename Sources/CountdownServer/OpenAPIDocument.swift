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
  efault":{"$ref":"#/components/responses/Error"}}}},"/metrics":{"get":{"tags":["service"],"operat\####
  ionId":"metrics","summary":"Prometheus text (docs/http.md, \"Metrics\").","responses":{"200":{"d\####
  escription":"The metrics.","content":{"text/plain":{"schema":{"type":"string"}}}},"default":{"$r\####
  ef":"#/components/responses/Error"}}}},"/openapi.json":{"get":{"tags":["service"],"operationId":\####
  "openapi","summary":"This document, as JSON.","responses":{"200":{"description":"The OpenAPI doc\####
  ument.","content":{"application/json":{"schema":{"type":"object"}}}},"default":{"$ref":"#/compon\####
  ents/responses/Error"}}}}},"components":{"securitySchemes":{"bearer":{"type":"http","scheme":"be\####
  arer","description":"The server's `--token` (or `--token-file`, `COUNTDOWN_TOKEN`)."}},"paramete\####
  rs":{"ActivityID":{"name":"id","in":"path","required":true,"description":"The activity's id (per\####
  cent-encoded in the path).","schema":{"type":"string","minLength":1,"maxLength":128}},"QueryToke\####
  n":{"name":"token","in":"query","description":"The token, for a browser that cannot send a heade\####
  r (the board and its event stream).","schema":{"type":"string"}}},"responses":{"BadRequest":{"de\####
  scription":"`invalidPayload`, `invalidDate` or `outOfOrder`: the message names the field.","cont\####
  ent":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},"NotFound":{"descrip\####
  tion":"`notFound`: no activity has that id (never, or dismissed).","content":{"application/json"\####
  :{"schema":{"$ref":"#/components/schemas/Error"}}}},"Conflict":{"description":"`duplicateID` or \####
  `activityEnded`.","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}\####
  }},"TooLarge":{"description":"`attributesTooLarge`: content over 4096 bytes, or a body over 64 K\####
  iB.","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},"LimitReac\####
  hed":{"description":"`limitReached`: `maxActivities` activities exist.","content":{"application/\####
  json":{"schema":{"$ref":"#/components/schemas/Error"}}}},"Unavailable":{"description":"`disabled\####
  `, `storageFailed` (try again) or `shutdown`.","content":{"application/json":{"schema":{"$ref":"\####
  #/components/schemas/Error"}}}},"Error":{"description":"Any other error: 401 `unauthorized`, 403\####
   `forbidden`, 404 (no such route), 405 (another method; with `Allow`), 413, 421 `misdirected`, 4\####
  29, 503.","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}}},"sch\####
  emas":{"Instant":{"type":"integer","description":"Milliseconds since 1970 (UTC), from 1000000000\####
  00 to the end of the year 9999.","minimum":100000000000,"maximum":253402300799999},"Error":{"typ\####
  e":"object","required":["code","message"],"properties":{"code":{"type":"string","enum":["invalid\####
  Payload","invalidDate","outOfOrder","timeWentBackwards","lineTooLong","unauthorized","forbidden"\####
  ,"notFound","misdirected","duplicateID","activityEnded","attributesTooLarge","limitReached","dis\####
  abled","storageFailed","shutdown","slowConsumer","systemError"]},"message":{"type":"string"}}},"\####
  Listing":{"type":"object","required":["at","activities"],"properties":{"at":{"$ref":"#/component\####
  s/schemas/Instant"},"activities":{"type":"array","items":{"$ref":"#/components/schemas/Activity"\####
  }}}},"Content":{"type":"object","description":"What an activity shows (docs/activities.md); its \####
  canonical JSON is at most 4096 bytes.","properties":{"title":{"type":"string"},"subtitle":{"type\####
  ":"string"},"alertMessage":{"type":"string"},"color":{"type":"string","pattern":"^#([0-9A-Fa-f]{\####
  6}|[0-9A-Fa-f]{8})$"},"fields":{"type":"object"},"relevance":{"type":"number"}}},"Milestone":{"t\####
  ype":"object","additionalProperties":false,"required":["name","atMs"],"properties":{"name":{"typ\####
  e":"string"},"atMs":{"type":"integer","description":"For a countdown, milliseconds before its en\####
  d (negative with overtime, after it); for an elapsed timer, elapsed milliseconds."},"content":{"\####
  type":"object","description":"A merge patch of the content, applied at the milestone's instant."\####
  }}},"LiveActivity":{"type":"object","additionalProperties":false,"description":"The iPhone Live \####
  Activity it drives (docs/pushes.md).","properties":{"pushTokens":{"type":"object","additionalPro\####
  perties":{"type":["boolean","null"]}},"startTokens":{"type":"object","additionalProperties":{"ty\####
  pe":["boolean","null"]}},"attributesType":{"type":"string"},"attributes":{"type":"object"},"keys\####
  ":{"type":"object","additionalProperties":{"type":"string"}},"dateEncoding":{"type":"string","en\####
  um":["reference","unix","unixMs","iso8601"]},"priority":{"type":"integer","enum":[5,10]}}},"Dism\####
  issal":{"description":"`immediate`, `default` (four hours after the end) or `{\"after\": instant\####
  }`.","oneOf":[{"type":"string","enum":["immediate","default"]},{"type":"object","required":["aft\####
  er"],"additionalProperties":false,"properties":{"after":{"$ref":"#/components/schemas/Instant"}}\####
  }]},"StartRequest":{"type":"object","additionalProperties":false,"required":["kind","title"],"pr\####
  operties":{"id":{"type":"string","minLength":1,"maxLength":128},"kind":{"type":"string","enum":[\####
  "countdown","elapsed"]},"endDate":{"$ref":"#/components/schemas/Instant"},"startDate":{"$ref":"#\####
  /components/schemas/Instant"},"goalMs":{"type":"integer","minimum":0},"title":{"type":"string"},\####
  "subtitle":{"type":"string"},"alertMessage":{"type":"string"},"color":{"type":"string","pattern"\####
  :"^#([0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$"},"fields":{"type":"object"},"relevance":{"type":"number"},\####
  "staleDate":{"$ref":"#/components/schemas/Instant"},"milestones":{"type":"array","items":{"$ref"\####
  :"#/components/schemas/Milestone"}},"endOnExpiry":{"$ref":"#/components/schemas/Dismissal"},"ove\####
  rtime":{"type":"boolean"},"liveActivity":{"$ref":"#/components/schemas/LiveActivity"}}},"UpdateR\####
  equest":{"type":"object","additionalProperties":false,"description":"A merge patch; `null` remov\####
  es a member where the member may be absent.","properties":{"title":{"type":"string"},"subtitle":\####
  {"type":["string","null"]},"alertMessage":{"type":["string","null"]},"color":{"oneOf":[{"type":"\####
  string","pattern":"^#([0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$"},{"type":"null"}]},"fields":{"type":["obj\####
  ect","null"]},"relevance":{"type":["number","null"]},"endDate":{"$ref":"#/components/schemas/Ins\####
  tant"},"startDate":{"$ref":"#/components/schemas/Instant"},"staleDate":{"oneOf":[{"$ref":"#/comp\####
  onents/schemas/Instant"},{"type":"null"}]},"milestones":{"type":"array","items":{"$ref":"#/compo\####
  nents/schemas/Milestone"}},"endOnExpiry":{"oneOf":[{"$ref":"#/components/schemas/Dismissal"},{"t\####
  ype":"null"}]},"overtime":{"type":"boolean"},"timestamp":{"$ref":"#/components/schemas/Instant"}\####
  ,"liveActivity":{"oneOf":[{"$ref":"#/components/schemas/LiveActivity"},{"type":"null"}]}}},"Paus\####
  eRequest":{"type":"object","additionalProperties":false,"properties":{"timestamp":{"$ref":"#/com\####
  ponents/schemas/Instant"}}},"EndRequest":{"type":"object","additionalProperties":false,"properti\####
  es":{"dismissal":{"$ref":"#/components/schemas/Dismissal"},"timestamp":{"$ref":"#/components/sch\####
  emas/Instant"},"title":{"type":"string"},"subtitle":{"type":["string","null"]},"alertMessage":{"\####
  type":["string","null"]},"color":{"oneOf":[{"type":"string","pattern":"^#([0-9A-Fa-f]{6}|[0-9A-F\####
  a-f]{8})$"},{"type":"null"}]},"fields":{"type":["object","null"]},"relevance":{"type":["number",\####
  "null"]}}},"Activity":{"type":"object","description":"An activity object (docs/protocol.md, \"Ac\####
  tivity objects\").","required":["id","kind","phase","value","text","progress","stale","overtime"\####
  ,"content","endDate","startDate","pausedAt","goalMs","milestone","nextMilestone","liveActivity"]\####
  ,"properties":{"id":{"type":"string"},"kind":{"type":"string","enum":["countdown","elapsed"]},"p\####
  hase":{"type":"string","enum":["active","paused","ended"]},"value":{"type":"integer","descriptio\####
  n":"The whole seconds shown (negative past the end of a countdown in overtime)."},"text":{"type"\####
  :"string","description":"The value in the server's `--style`."},"progress":{"type":["number","nu\####
  ll"],"minimum":0,"maximum":1},"stale":{"type":"boolean"},"overtime":{"type":"boolean"},"content"\####
  :{"$ref":"#/components/schemas/Content"},"endDate":{"oneOf":[{"$ref":"#/components/schemas/Insta\####
  nt"},{"type":"null"}]},"startDate":{"oneOf":[{"$ref":"#/components/schemas/Instant"},{"type":"nu\####
  ll"}]},"pausedAt":{"oneOf":[{"$ref":"#/components/schemas/Instant"},{"type":"null"}]},"goalMs":{\####
  "type":["integer","null"]},"milestone":{"type":["string","null"]},"nextMilestone":{"oneOf":[{"ty\####
  pe":"object","required":["name","at"],"properties":{"name":{"type":"string"},"at":{"type":"integ\####
  er"}}},{"type":"null"}]},"liveActivity":{"oneOf":[{"$ref":"#/components/schemas/LiveActivity"},{\####
  "type":"null"}]}}}}}}
  """####
}
